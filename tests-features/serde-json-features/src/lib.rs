//! Canonical payloads in a build where `serde_json`'s `arbitrary_precision` and `preserve_order`
//! are switched on, as any crate in a user's dependency tree may do (cargo unifies features).
//!
//! The payload corpus must give exactly the bytes and digests it gives in the normal build,
//! where the library's own unit tests check the same file, and a payload must survive a
//! request's whole life in a store unchanged. Run by `.ci/run`; see `docs/reliability.md`.

#[cfg(test)]
mod tests;
