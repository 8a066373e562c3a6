//! Opening a store from where it is: the one place that knows every backend. It sits above
//! them (each backend implements [`Store`] and knows nothing of the others), and the gate
//! opens its store through it.

use super::Store;
use super::dir::DirStore;
use super::location::Location;
use crate::error::Error;

/// The store at `location`, opened (a directory store is created if missing).
///
/// # Errors
///
/// What the backend's own opening refuses with; [`Error::InvalidInput`] for a PostgreSQL
/// location in a build without the `postgres` feature.
pub(crate) fn open(location: Location) -> Result<Box<dyn Store>, Error> {
    // Every step in a `tracing` span of its own (and, for the conformance suite, noted).
    Ok(Box::new(super::traced::Traced(open_untraced(location)?)))
}

fn open_untraced(location: Location) -> Result<Box<dyn Store>, Error> {
    Ok(match location {
        Location::Dir(dir) => Box::new(DirStore::open(dir)?),
        #[cfg(feature = "postgres")]
        Location::Postgres(url) => Box::new(super::pg::PgStore::open(&url)?),
        #[cfg(not(feature = "postgres"))]
        Location::Postgres(_) => {
            return Err(Error::InvalidInput {
                field: "store",
                problem: "this build has no PostgreSQL store (build approval-gate with its `postgres` feature)".into(),
            });
        }
    })
}
