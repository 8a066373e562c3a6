//! Who is signed in: MAC'd cookies, page keys (CSRF tokens) derived from them, sign-in
//! challenges, and the one thing kept on the server, the sessions signed out.
//!
//! Every token is text the browser holds and the server checks with a key of its own, so
//! several instances that share the key file (`--session-key-file`) take each other's
//! sessions, and a restart without one signs everybody out. A sign-out is remembered by the
//! instance that took it ([`SignedOut`]). Each use has its own key, derived
//! from the session key with BLAKE3's `derive_key`: a session cookie is no CSRF token, and a
//! CSRF token opens no session.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;

/// How long a session lasts from sign-in.
pub(crate) const SESSION_TTL: Duration = Duration::from_secs(8 * 60 * 60);
/// How long a sign-in challenge may be answered.
pub(crate) const SIGNIN_TTL: Duration = Duration::from_secs(5 * 60);

/// The keys of one server (or of every instance sharing a key file).
#[derive(Clone)]
pub(crate) struct Keys {
    session: [u8; 32],
    csrf: [u8; 32],
    signin: [u8; 32],
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

impl Keys {
    /// Keys derived from `secret`.
    pub(crate) fn from_secret(secret: &[u8; 32]) -> Self {
        let derive = |context: &str| blake3::derive_key(context, secret);
        Self {
            session: derive("approval-gate web 2026 session cookie v1"),
            csrf: derive("approval-gate web 2026 csrf token v1"),
            signin: derive("approval-gate web 2026 sign-in challenge v1"),
        }
    }

    /// Fresh keys, for one process: sessions end when it does.
    pub(crate) fn random() -> std::io::Result<Self> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(std::io::Error::other)?;
        Ok(Self::from_secret(&secret))
    }

    /// The keys of a key file: 64 hexadecimal digits (`openssl rand -hex 32`), readable by
    /// its owner only.
    pub(crate) fn load(path: &Path) -> Result<Self, String> {
        use std::os::unix::fs::PermissionsExt as _;
        let shown = path.display();
        let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "{shown}: readable or writable by others (mode {:o}); `chmod 600` it: whoever \
                 reads it can sign in as any approver's session",
                meta.permissions().mode() & 0o777
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        let hex = text.trim();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "{shown}: not 64 hexadecimal digits (make one with `openssl rand -hex 32`)"
            ));
        }
        let mut secret = [0u8; 32];
        for (i, byte) in secret.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map_err(|e| format!("{shown}: {e}"))?;
        }
        Ok(Self::from_secret(&secret))
    }

    /// A session cookie's value for `principal`, valid until `SESSION_TTL` from `now`. Each
    /// is different (a random part), so each has its own CSRF token.
    pub(crate) fn session(&self, principal: &str, now: SystemTime) -> std::io::Result<String> {
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce).map_err(std::io::Error::other)?;
        let until = millis(now + SESSION_TTL);
        let body = format!("{until}.{}.{}", B64.encode(principal), B64.encode(nonce));
        let mac = blake3::keyed_hash(&self.session, body.as_bytes());
        Ok(format!("{body}.{}", B64.encode(mac.as_bytes())))
    }

    /// The principal of a session cookie that is ours and unexpired.
    pub(crate) fn principal(&self, cookie: &str, now: SystemTime) -> Option<String> {
        let (body, mac) = cookie.rsplit_once('.')?;
        let expected = blake3::keyed_hash(&self.session, body.as_bytes());
        if !mac_matches(&expected, mac) {
            return None;
        }
        let mut parts = body.split('.');
        let (until, principal) = (parts.next()?, parts.next()?);
        if until.parse::<u128>().ok()? <= millis(now) {
            return None;
        }
        String::from_utf8(B64.decode(principal).ok()?).ok()
    }

    /// The page key of a session (its CSRF token): what every state change must send, as
    /// the `X-CSRF-Token` header. Sign-in hands it to the page's script alone, which keeps it
    /// in the origin's own storage: a cookie reaches every port of the host (RFC 6265 §8.5),
    /// storage does not, and no page ever shows it.
    pub(crate) fn csrf(&self, session_cookie: &str) -> String {
        B64.encode(blake3::keyed_hash(&self.csrf, session_cookie.as_bytes()).as_bytes())
    }

    /// Whether `token` is the CSRF token of `session_cookie` (in constant time).
    pub(crate) fn csrf_matches(&self, session_cookie: &str, token: &str) -> bool {
        mac_matches(
            &blake3::keyed_hash(&self.csrf, session_cookie.as_bytes()),
            token,
        )
    }

    /// A sign-in ticket (kept by the browser in a cookie) and the WebAuthn challenge it
    /// stands for.
    pub(crate) fn signin_ticket(&self, now: SystemTime) -> std::io::Result<(String, [u8; 32])> {
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).map_err(std::io::Error::other)?;
        let body = format!("{}.{}", millis(now + SIGNIN_TTL), B64.encode(nonce));
        let mac = blake3::keyed_hash(&self.signin, body.as_bytes());
        let ticket = format!("{body}.{}", B64.encode(mac.as_bytes()));
        let challenge = self.signin_challenge(&ticket);
        Ok((ticket, challenge))
    }

    /// The challenge of a ticket that is ours and unexpired.
    pub(crate) fn check_ticket(&self, ticket: &str, now: SystemTime) -> Option<[u8; 32]> {
        let (body, mac) = ticket.rsplit_once('.')?;
        if !mac_matches(&blake3::keyed_hash(&self.signin, body.as_bytes()), mac) {
            return None;
        }
        let (until, _) = body.split_once('.')?;
        if until.parse::<u128>().ok()? <= millis(now) {
            return None;
        }
        Some(self.signin_challenge(ticket))
    }

    fn signin_challenge(&self, ticket: &str) -> [u8; 32] {
        let mut hasher = blake3::Hasher::new_keyed(&self.signin);
        hasher.update(b"challenge\0");
        hasher.update(ticket.as_bytes());
        *hasher.finalize().as_bytes()
    }
}

/// Sessions signed out before they expired: the one thing a sign-out needs remembered.
///
/// Held in this process's memory until each session would have expired anyway: instances
/// sharing a key file do not learn of each other's sign-outs (a new key file ends every
/// session everywhere).
#[derive(Debug, Default)]
pub(crate) struct SignedOut {
    /// The MAC part of each session cookie signed out, with the time it expires (ms).
    ended: std::sync::Mutex<std::collections::HashMap<String, u128>>,
}

/// Sign-outs remembered at most: each needs a session and its page key, so only approvers
/// fill it, and an expired session is forgotten first.
const MAX_SIGNED_OUT: usize = 100_000;

impl SignedOut {
    /// Ends `cookie` (a session cookie of ours) until it would have expired; `Err` when no
    /// more can be remembered, so that the caller says the session did not end.
    pub(crate) fn end(&self, cookie: &str, now: SystemTime) -> Result<(), String> {
        let Some((until, mac)) = cookie
            .split_once('.')
            .and_then(|(until, _)| Some((until.parse::<u128>().ok()?, cookie.rsplit_once('.')?.1)))
        else {
            return Err("not a session".into());
        };
        let mut ended = self.lock();
        if ended.len() >= MAX_SIGNED_OUT {
            let now = millis(now);
            ended.retain(|_, until| *until > now);
        }
        if ended.len() >= MAX_SIGNED_OUT {
            return Err(format!(
                "{MAX_SIGNED_OUT} sessions signed out and not expired yet; restart serve with a \
                 new --session-key-file to end them all"
            ));
        }
        ended.insert(mac.to_owned(), until);
        Ok(())
    }

    /// Whether `cookie` was signed out.
    pub(crate) fn contains(&self, cookie: &str) -> bool {
        cookie
            .rsplit_once('.')
            .is_some_and(|(_, mac)| self.lock().contains_key(mac))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, u128>> {
        self.ended
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Compares a MAC with its base64url text in constant time (`blake3::Hash`'s equality).
fn mac_matches(expected: &blake3::Hash, given: &str) -> bool {
    let Ok(bytes) = B64.decode(given) else {
        return false;
    };
    let Ok(bytes) = <[u8; 32]>::try_from(bytes.as_slice()) else {
        return false;
    };
    *expected == blake3::Hash::from_bytes(bytes)
}

fn millis(at: SystemTime) -> u128 {
    at.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Keys {
        Keys::from_secret(&[7; 32])
    }

    #[test]
    fn a_session_names_its_principal_until_it_expires() {
        let now = SystemTime::now();
        let cookie = keys().session("alice@example.com", now).unwrap();
        assert_ne!(cookie, keys().session("alice@example.com", now).unwrap());
        assert_eq!(
            keys().principal(&cookie, now).as_deref(),
            Some("alice@example.com")
        );
        let later = now + SESSION_TTL + Duration::from_millis(1);
        assert_eq!(keys().principal(&cookie, later), None);
        // Another key, another principal or another expiry: not ours.
        assert_eq!(Keys::from_secret(&[8; 32]).principal(&cookie, now), None);
        let (body, mac) = cookie.rsplit_once('.').unwrap();
        let parts: Vec<&str> = body.split('.').collect();
        let forged = format!(
            "{}.{}.{}.{mac}",
            parts[0],
            B64.encode("mallory@example.com"),
            parts[2]
        );
        assert_eq!(keys().principal(&forged, now), None);
        let extended = format!("{}{}", "9", &cookie);
        assert_eq!(keys().principal(&extended, now), None);
        assert_eq!(keys().principal("", now), None);
        assert_eq!(keys().principal("a.b.c", now), None);
    }

    #[test]
    fn a_csrf_token_belongs_to_one_session_and_is_no_session() {
        let now = SystemTime::now();
        let alice = keys().session("alice@example.com", now).unwrap();
        let bob = keys().session("bob@example.com", now).unwrap();
        let token = keys().csrf(&alice);
        assert!(keys().csrf_matches(&alice, &token));
        assert!(!keys().csrf_matches(&bob, &token));
        assert!(!keys().csrf_matches(&alice, ""));
        assert!(!keys().csrf_matches(&alice, &keys().csrf(&bob)));
        assert_eq!(keys().principal(&token, now), None);
    }

    #[test]
    fn a_signin_ticket_stands_for_one_challenge_for_a_while() {
        let now = SystemTime::now();
        let (ticket, challenge) = keys().signin_ticket(now).unwrap();
        assert_eq!(keys().check_ticket(&ticket, now), Some(challenge));
        let (other, other_challenge) = keys().signin_ticket(now).unwrap();
        assert_ne!(challenge, other_challenge, "each ticket its own challenge");
        assert_ne!(ticket, other);
        assert_eq!(keys().check_ticket(&ticket, now + SIGNIN_TTL), None);
        assert_eq!(Keys::from_secret(&[8; 32]).check_ticket(&ticket, now), None);
        // A session cookie is no ticket, and a ticket no session.
        assert_eq!(keys().principal(&ticket, now), None);
        let session = keys().session("alice@example.com", now).unwrap();
        assert_eq!(keys().check_ticket(&session, now), None);
    }

    #[test]
    fn a_signed_out_session_stays_out_and_others_stay_in() {
        let now = SystemTime::now();
        let out = SignedOut::default();
        let first = keys().session("alice@example.com", now).unwrap();
        let second = keys().session("alice@example.com", now).unwrap();
        assert!(!out.contains(&first));
        out.end(&first, now).unwrap();
        assert!(out.contains(&first));
        assert!(!out.contains(&second), "each session its own");
        assert!(out.end("garbage", now).is_err());
        assert!(!out.contains(""));
    }

    #[test]
    fn keys_never_show_themselves() {
        assert_eq!(format!("{:?}", keys()), "Keys(..)");
    }

    #[test]
    fn key_files_must_be_private_and_well_formed() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, format!("{}\n", "ab".repeat(32))).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let loaded = Keys::load(&path).unwrap();
        let now = SystemTime::now();
        let cookie = loaded.session("alice@example.com", now).unwrap();
        assert!(
            Keys::from_secret(&[0xab; 32])
                .principal(&cookie, now)
                .is_some(),
            "the same secret, the same keys"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(Keys::load(&path).unwrap_err().contains("chmod 600"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "abc").unwrap();
        assert!(Keys::load(&path).unwrap_err().contains("64 hexadecimal"));
        assert!(Keys::load(&dir.path().join("missing")).is_err());
    }
}
