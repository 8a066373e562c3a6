//! Which run of the machine this is: what the directory store writes without syncing is
//! good for one run at most, and says which.

use std::sync::OnceLock;

/// Length of a boot tag: a UUID in text.
pub(super) const BOOT_LEN: usize = 36;

/// Written where no boot id can be read: never equal to one, so never taken as this boot.
pub(super) const UNKNOWN: &str = "unknown-boot------------------------";

/// This run of the machine: Linux's boot id; `None` where there is none to read.
pub(super) fn current() -> Option<&'static str> {
    static BOOT: OnceLock<Option<String>> = OnceLock::new();
    let id = BOOT
        .get_or_init(|| {
            std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .ok()
                .map(|id| id.trim().to_owned())
                .filter(|id| {
                    id.len() == BOOT_LEN && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
                })
        })
        .as_deref()?;
    #[cfg(feature = "fs-trace")]
    let id = crate::fs_trace::boot_tag(id);
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unknown_tag_has_a_boot_tags_length_and_is_no_boot_id() {
        assert_eq!(UNKNOWN.len(), BOOT_LEN);
        assert_ne!(current(), Some(UNKNOWN));
    }
}
