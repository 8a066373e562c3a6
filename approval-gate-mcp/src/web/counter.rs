//! The signature counter (WebAuthn §7.2 step 22), checked against the store's own record.
//!
//! An authenticator that counts its signatures (a security key, some platform authenticators)
//! returns a larger counter each time; a clone of it, used after the original, returns one
//! that is not larger than a counter already seen. The executor verifies offline and keeps no
//! history, so the server checks here, before it records an approval: against every passkey
//! approval by the same key that the live store still holds (the server keeps no state of its
//! own). Authenticators that do not count (synced passkeys report 0) are not checked: §7.2
//! says so too. Archived requests are out of the store's sight, and so are their counters.

use approval_gate::passkey::{Assertion, Passkey};
use approval_gate::{Error, Gate, ListFilter, ListItem};

/// The counter in authenticator data (bytes 33 to 36, big-endian), if it is long enough.
fn counter(authenticator_data: &[u8]) -> Option<u32> {
    let bytes = authenticator_data.get(33..37)?;
    Some(u32::from_be_bytes(bytes.try_into().ok()?))
}

/// The highest counter of `passkey` among the approvals of the live store.
fn highest(gate: &Gate, passkey: &Passkey) -> Result<u32, Error> {
    let mut highest = 0;
    let mut after = None;
    loop {
        let page = gate.list(ListFilter::All, after, approval_gate::limits::MAX_PAGE)?;
        for item in &page.items {
            let ListItem::Request(report) = item else {
                continue;
            };
            for approval in report.request().approvals() {
                if let Ok((key, stored)) = Assertion::dearmor(approval.signature())
                    && key == *passkey
                    && let Some(seen) = counter(&stored.authenticator_data)
                {
                    highest = highest.max(seen);
                }
            }
        }
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(highest),
        }
    }
}

/// Refuses an assertion whose counter is not above every counter of the same key the store
/// holds (when either is not 0): `Ok(Err(why))`.
pub(crate) fn check(
    gate: &Gate,
    passkey: &Passkey,
    assertion: &Assertion,
) -> Result<Result<(), String>, Error> {
    let Some(now) = counter(&assertion.authenticator_data) else {
        // Too short to hold one: the gate refuses it with its reason.
        return Ok(Ok(()));
    };
    let seen = highest(gate, passkey)?;
    if (now != 0 || seen != 0) && now <= seen {
        return Ok(Err(format!(
            "the passkey's signature counter went back ({now} after {seen}): it may be a clone \
             of the authenticator; nothing was approved"
        )));
    }
    Ok(Ok(()))
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
