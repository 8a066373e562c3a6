//! The signature counter (WebAuthn §7.2 step 22), checked against the store's own record.
//!
//! An authenticator that counts its signatures (a security key, some platform authenticators)
//! returns a larger counter each time; a clone of it, used after the original, returns one
//! that is not larger than a counter already seen. The executor verifies offline and keeps no
//! history, so the gate checks when it records an approval, whatever front end approves:
//! against every passkey approval by the same key that the live store holds, read under a
//! lock of the whole store that is held until the new approval is written
//! (`Store::lock_counters`), so two approvals by copies of one authenticator never both pass.
//! Authenticators that do not count (synced passkeys report 0) are not checked: §7.2 says so
//! too. Archived requests are out of the store's sight, and so are their counters.

use super::{Assertion, Passkey};
use crate::request::Request;

/// The counter in authenticator data (bytes 33 to 36, big-endian), if it is long enough.
fn counter(authenticator_data: &[u8]) -> Option<u32> {
    let bytes = authenticator_data.get(33..37)?;
    Some(u32::from_be_bytes(bytes.try_into().ok()?))
}

/// The passkey and the counter of an approval's signature, if it is a passkey assertion
/// envelope long enough to hold one (what is not, the signature check refuses).
pub(crate) fn of_signature(signature: &str) -> Option<(Passkey, u32)> {
    let (passkey, assertion) = Assertion::dearmor(signature).ok()?;
    let counter = counter(&assertion.authenticator_data)?;
    Some((passkey, counter))
}

/// Whether `now`, the counter of a new approval by `passkey`, is above every counter of the
/// same key among the approvals of `requests` (unless it and they are all 0); `Err` says why
/// not, as a sentence.
pub(crate) fn check<'a>(
    passkey: &Passkey,
    now: u32,
    requests: impl IntoIterator<Item = &'a Request>,
) -> Result<(), String> {
    let seen = requests
        .into_iter()
        .flat_map(Request::approvals)
        .filter_map(|approval| of_signature(approval.signature()))
        .filter(|(key, _)| key == passkey)
        .map(|(_, counter)| counter)
        .max()
        .unwrap_or(0);
    if (now != 0 || seen != 0) && now <= seen {
        return Err(format!(
            "the passkey's signature counter went back ({now} after {seen}): it may be a clone \
             of the authenticator; nothing was approved"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_is_big_endian_after_the_rp_id_hash_and_flags() {
        let mut data = vec![0u8; 37];
        data[33..37].copy_from_slice(&[0, 0, 1, 2]);
        assert_eq!(counter(&data), Some(258));
        assert_eq!(counter(&data[..36]), None);
        data.push(9);
        assert_eq!(counter(&data), Some(258));
    }
}
