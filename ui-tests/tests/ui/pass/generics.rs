//! Generics with where clauses and bounds, lifetimes, const generics, `impl Trait` arguments
//! and an `impl Trait` inside the returned `Result`.

use std::fmt::{Debug, Display};
use std::io::Write;

use approval_gate::{Claim, Error, requires_approval};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry<K> {
    pub key: K,
    pub cents: i64,
}

pub struct Ledger<'a, K> {
    name: &'a str,
    entries: Vec<Entry<K>>,
}

impl<'a, K> Ledger<'a, K>
where
    K: Serialize + DeserializeOwned + Clone + Debug,
{
    /// A borrowed return type, elided from `&self`.
    #[requires_approval(operation = "ledger.append")]
    pub fn append(
        &mut self,
        #[payload] entry: Entry<K>,
        approval: Claim<'_>,
    ) -> Result<&str, Error> {
        approval.assert_active()?;
        self.entries.push(entry.clone());
        Ok(self.name)
    }

    /// Named lifetimes, from the impl and from the function.
    #[requires_approval(operation = "ledger.append")]
    pub fn append_named<'g>(
        &mut self,
        #[payload] entry: Entry<K>,
        approval: Claim<'g>,
        label: &'a str,
    ) -> Result<&'a str, Error> {
        approval.assert_active()?;
        self.entries.push(entry.clone());
        Ok(label)
    }
}

/// Type and const parameters, bounds inline and in a where clause.
#[requires_approval(operation = "batch.run")]
pub fn run_batch<T: Clone, const N: usize>(
    #[payload] items: [T; N],
    approval: Claim<'_>,
) -> Result<Vec<T>, Error>
where
    T: Serialize + DeserializeOwned,
    [T; N]: Serialize + DeserializeOwned,
{
    approval.assert_active()?;
    Ok(items.to_vec())
}

/// `impl Trait` arguments, and `impl Trait` in the returned `Result`.
#[requires_approval(operation = "report.write")]
pub fn report(
    #[payload] entry: Entry<String>,
    approval: Claim<'_>,
    mut out: impl Write,
    label: impl Display,
) -> Result<impl Display, Error> {
    approval.assert_active()?;
    writeln!(out, "{label}: {} {}", entry.key, entry.cents).map_err(|source| Error::Io {
        op: "write report",
        path: "<out>".into(),
        source,
    })?;
    Ok(entry.cents)
}

/// A payload type with an elided lifetime (deserialized as owned).
#[requires_approval(operation = "memo.post")]
pub fn post(
    #[payload] memo: std::borrow::Cow<'_, str>,
    approval: Claim<'_>,
) -> Result<usize, Error> {
    approval.assert_active()?;
    Ok(memo.len())
}

/// An anonymous payload type.
#[requires_approval(operation = "job.run")]
pub fn run_any(
    #[payload] job: impl Serialize + DeserializeOwned + Debug,
    approval: Claim<'_>,
) -> Result<String, Error> {
    approval.assert_active()?;
    Ok(format!("{job:?}"))
}

/// An `async fn` with generics and a borrowed argument. Its payload type is `Send + 'static`:
/// the store's work runs on a thread of its own, which hands the grant back.
#[requires_approval(operation = "ledger.append")]
pub async fn append_async<'l, K>(
    #[payload] entry: Entry<K>,
    approval: Claim<'_>,
    ledger: &'l mut Vec<Entry<K>>,
) -> Result<&'l [Entry<K>], Error>
where
    K: Serialize + DeserializeOwned + Clone + Send + 'static,
{
    approval.assert_active()?;
    ledger.push(entry.clone());
    Ok(ledger)
}

fn main() {
    let mut ledger: Ledger<'_, u8> = Ledger {
        name: "main",
        entries: Vec::new(),
    };
    let _ = &mut ledger;
}
