//! Time: timestamps and the injectable clock.
//!
//! Every expiry decision reads a [`Clock`], so tests can cross an expiry without sleeping and
//! so the "read the clock again after persistence" rule is one method call that can be
//! observed.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time with millisecond precision, as milliseconds since the Unix epoch (UTC).
///
/// Serialized as RFC 3339 text (`2026-11-30T16:28:57.123Z`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The timestamp `millis` milliseconds after the Unix epoch.
    #[must_use]
    pub const fn from_unix_millis(millis: i64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the Unix epoch.
    #[must_use]
    pub const fn unix_millis(self) -> i64 {
        self.0
    }

    /// This timestamp moved forward by `duration` (saturating).
    #[must_use]
    pub fn saturating_add(self, duration: Duration) -> Self {
        let millis = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        Self(self.0.saturating_add(millis))
    }

    /// This timestamp moved back by `duration` (saturating).
    #[must_use]
    pub fn saturating_sub(self, duration: Duration) -> Self {
        let millis = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        Self(self.0.saturating_sub(millis))
    }

    /// Signed milliseconds from `self` to `later` (negative if `later` is earlier).
    #[must_use]
    pub const fn millis_until(self, later: Self) -> i64 {
        later.0.saturating_sub(self.0)
    }

    fn to_system_time(self) -> Option<SystemTime> {
        let magnitude = Duration::from_millis(self.0.unsigned_abs());
        if self.0 >= 0 {
            UNIX_EPOCH.checked_add(magnitude)
        } else {
            UNIX_EPOCH.checked_sub(magnitude)
        }
    }

    fn from_system_time(time: SystemTime) -> Self {
        match time.duration_since(UNIX_EPOCH) {
            Ok(after) => Self(i64::try_from(after.as_millis()).unwrap_or(i64::MAX)),
            Err(before) => Self(-i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX)),
        }
    }

    /// Parses RFC 3339 text in UTC (`Z`), as written by this crate.
    ///
    /// # Errors
    ///
    /// A message naming the problem when the text is not such a timestamp.
    pub fn parse_rfc3339(text: &str) -> Result<Self, String> {
        humantime::parse_rfc3339(text)
            .map(Self::from_system_time)
            .map_err(|e| format!("invalid timestamp {text:?}: {e}"))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_system_time() {
            // humantime only formats times from 1970 to 9999; everything we write is in range.
            Some(time) if self.0 >= 0 && self.0 < 253_402_300_800_000 => {
                write!(f, "{}", humantime::format_rfc3339_millis(time))
            }
            _ => write!(f, "@{}ms", self.0),
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Self::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

/// A source of the current time.
///
/// The gate reads it for every expiry decision, including the second read after a consume
/// has been made durable. Implementations must be cheap and thread-safe.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The operating system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_system_time(SystemTime::now())
    }
}

/// A clock that moves only when told to: for tests and simulations.
///
/// Clones share the same time, so a test can hold one handle and give another to a
/// [`Gate`](crate::Gate).
///
/// ```
/// use std::time::Duration;
/// use approval_gate::{Clock, ManualClock, Timestamp};
///
/// let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(clock.now(), Timestamp::from_unix_millis(3_000));
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock stopped at `start`.
    #[must_use]
    pub fn new(start: Timestamp) -> Self {
        Self(Arc::new(AtomicI64::new(start.unix_millis())))
    }

    /// A clock stopped at the current wall-clock time.
    #[must_use]
    pub fn starting_now() -> Self {
        Self::new(SystemClock.now())
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let millis = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.0.fetch_add(millis, Ordering::SeqCst);
    }

    /// Sets the clock to `to` (which may be earlier: clocks do jump).
    pub fn set(&self, to: Timestamp) {
        self.0.store(to.unix_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix_millis(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trip_keeps_millis() {
        let t = Timestamp::from_unix_millis(1_796_056_137_123);
        let text = t.to_string();
        assert_eq!(text, "2026-11-30T16:28:57.123Z");
        assert_eq!(Timestamp::parse_rfc3339(&text).unwrap(), t);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), t);
    }

    #[test]
    fn manual_clock_is_shared_between_clones() {
        let a = ManualClock::new(Timestamp::from_unix_millis(0));
        let b = a.clone();
        a.advance(Duration::from_millis(1500));
        assert_eq!(b.now().unix_millis(), 1500);
        b.set(Timestamp::from_unix_millis(10));
        assert_eq!(a.now().unix_millis(), 10);
    }
}
