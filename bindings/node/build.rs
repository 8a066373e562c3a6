//! napi-build: the linker flags a N-API addon needs (its `napi_*` symbols are resolved by the
//! node process that loads it).

fn main() {
    napi_build::setup();
}
