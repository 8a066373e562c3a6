//! Rate limits on sign-in, per client address: a fixed window, in memory.
//!
//! The only state the server keeps outside the store, and it may be lost: a restart, or
//! another instance, starts counting again. It slows a guesser down; the passkey is what
//! keeps them out.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Attempts allowed per address in one window.
pub(crate) const ATTEMPTS: u32 = 20;
/// The window.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most; beyond, the oldest windows are forgotten first.
const MAX_ADDRESSES: usize = 10_000;

/// Counts attempts per address.
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    windows: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl Limiter {
    /// Counts an attempt from `peer`; `Err` with the time to wait when over the limit.
    pub(crate) fn check(&self, peer: IpAddr) -> Result<(), Duration> {
        self.check_at(peer, Instant::now())
    }

    fn check_at(&self, peer: IpAddr, now: Instant) -> Result<(), Duration> {
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
        if *count >= ATTEMPTS {
            return Err(WINDOW.saturating_sub(now.duration_since(*start)));
        }
        *count += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_gets_its_attempts_per_window() {
        let limiter = Limiter::default();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..ATTEMPTS {
            assert!(limiter.check_at(a, t0).is_ok());
        }
        let wait = limiter
            .check_at(a, t0 + Duration::from_secs(10))
            .unwrap_err();
        assert_eq!(wait, Duration::from_secs(50));
        assert!(
            limiter.check_at(b, t0).is_ok(),
            "another address is not held up"
        );
        assert!(limiter.check_at(a, t0 + WINDOW).is_ok(), "a new window");
    }
}
