//! How many refused sign-ins are printed, per client address: a fixed window, in memory.
//!
//! Nothing here stands between a passkey and a session: beginning a sign-in is stateless and
//! cheap (a MAC'd ticket), and a sign-in whose assertion verifies is never held up, so no
//! local process (every one shares the loopback address, as every user behind a reverse
//! proxy shares the proxy's) can lock an approver out. What a flood of refused sign-ins
//! costs is lines on the server's stderr: those are printed up to [`ATTEMPTS`] per address
//! and window, then once more to say the rest of the window is not printed.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Refusals printed per address in one window.
pub(crate) const ATTEMPTS: u32 = 20;
/// The window.
pub(crate) const WINDOW: std::time::Duration = std::time::Duration::from_secs(60);
/// Addresses remembered at most; beyond, the oldest windows are forgotten first.
const MAX_ADDRESSES: usize = 10_000;

/// Whether to print a refused sign-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Print {
    /// Print it.
    Yes,
    /// Print it, and say that the rest of the window from this address is not printed.
    Last,
    /// Not printed.
    No,
}

/// Counts refused sign-ins per address.
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    windows: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl Limiter {
    /// Counts a refused sign-in from `peer`: whether to print it.
    pub(crate) fn refused(&self, peer: IpAddr) -> Print {
        self.refused_at(peer, Instant::now())
    }

    fn refused_at(&self, peer: IpAddr, now: Instant) -> Print {
        let mut windows = self
            .windows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if windows.len() >= MAX_ADDRESSES {
            windows.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
        }
        let (start, count) = windows.entry(peer).or_insert((now, 0));
        if now.duration_since(*start) >= WINDOW {
            *start = now;
            *count = 0;
        }
        *count = count.saturating_add(1);
        match (*count).cmp(&ATTEMPTS) {
            std::cmp::Ordering::Less => Print::Yes,
            std::cmp::Ordering::Equal => Print::Last,
            std::cmp::Ordering::Greater => Print::No,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_address_gets_its_lines_per_window() {
        let limiter = Limiter::default();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 1..ATTEMPTS {
            assert_eq!(limiter.refused_at(a, t0), Print::Yes);
        }
        assert_eq!(limiter.refused_at(a, t0), Print::Last);
        let later = t0 + Duration::from_secs(10);
        assert_eq!(limiter.refused_at(a, later), Print::No);
        assert_eq!(
            limiter.refused_at(b, t0),
            Print::Yes,
            "another address is printed"
        );
        assert_eq!(
            limiter.refused_at(a, t0 + WINDOW),
            Print::Yes,
            "a new window"
        );
    }
}
