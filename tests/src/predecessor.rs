//! A clean-room writer of the store approval-gate-mcp (Node) 0.1 writes, from its documented
//! format (`docs/migrating.md`): what our binaries must recognise, and `approval-gate migrate`
//! bring over. No code of the predecessor: its records are `JSON.stringify(record, null, 2)`
//! (two-space indent, keys in its interface's order, absent optionals left out, no trailing
//! newline), its audit lines `JSON.stringify({at, event, id, ...}) + "\n"`, its directories
//! 0755 and files 0644.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// One request record of the predecessor, as its interface orders its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OldRecord {
    /// 12 lowercase hex characters.
    pub id: String,
    /// The action text.
    pub action: String,
    /// Why.
    pub reason: String,
    /// Who asked, if they said.
    pub requested_by: Option<String>,
    /// `pending`, `approved`, `denied` or `expired`.
    pub status: String,
    /// `toISOString()` text.
    pub created_at: String,
    /// `toISOString()` text.
    pub expires_at: String,
    /// When decided, if it was.
    pub decided_at: Option<String>,
    /// The decision's reason, if one was given.
    pub decision_reason: Option<String>,
}

impl OldRecord {
    /// A pending request filed at `created_at` for `ttl_ms`.
    #[must_use]
    pub fn pending(id: &str, action: &str, created_ms: i64, ttl_ms: i64) -> Self {
        Self {
            id: id.to_owned(),
            action: action.to_owned(),
            reason: "because".to_owned(),
            requested_by: None,
            status: "pending".to_owned(),
            created_at: iso(created_ms),
            expires_at: iso(created_ms + ttl_ms),
            decided_at: None,
            decision_reason: None,
        }
    }

    /// The same request, decided `status` at `at_ms` with `reason`.
    #[must_use]
    pub fn decided(mut self, status: &str, at_ms: i64, reason: Option<&str>) -> Self {
        status.clone_into(&mut self.status);
        self.decided_at = Some(iso(at_ms));
        self.decision_reason = reason.map(str::to_owned);
        self
    }

    /// The bytes `JSON.stringify(record, null, 2)` gives.
    ///
    /// # Panics
    ///
    /// Never: a string always encodes.
    #[must_use]
    pub fn bytes(&self) -> Vec<u8> {
        let mut fields: Vec<(&str, &str)> = vec![
            ("id", &self.id),
            ("action", &self.action),
            ("reason", &self.reason),
        ];
        if let Some(who) = &self.requested_by {
            fields.push(("requestedBy", who));
        }
        fields.push(("status", &self.status));
        fields.push(("createdAt", &self.created_at));
        fields.push(("expiresAt", &self.expires_at));
        if let Some(at) = &self.decided_at {
            fields.push(("decidedAt", at));
        }
        if let Some(reason) = &self.decision_reason {
            fields.push(("decisionReason", reason));
        }
        let mut text = String::from("{\n");
        for (n, (key, value)) in fields.iter().enumerate() {
            let comma = if n + 1 < fields.len() { "," } else { "" };
            let value = serde_json::to_string(value).unwrap();
            writeln!(text, "  \"{key}\": {value}{comma}").unwrap();
        }
        text.push('}');
        text.into_bytes()
    }
}

/// `new Date(ms).toISOString()`.
#[must_use]
pub fn iso(ms: i64) -> String {
    approval_gate::Timestamp::from_unix_millis(ms).to_string()
}

/// A store of the predecessor in `root`, written as it writes one.
#[derive(Debug)]
pub struct OldStore {
    /// Its directory.
    pub root: PathBuf,
}

impl OldStore {
    /// Makes the directory (0755) and `requests/`, as `fs.mkdir(recursive)` does.
    ///
    /// # Panics
    ///
    /// On an I/O error.
    #[must_use]
    pub fn create(root: &Path) -> Self {
        for dir in [root.to_owned(), root.join("requests")] {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Self {
            root: root.to_owned(),
        }
    }

    /// Writes `record` to `requests/<id>.json` (truncate and write, 0644).
    ///
    /// # Panics
    ///
    /// On an I/O error.
    pub fn write(&self, record: &OldRecord) {
        self.write_raw(&format!("{}.json", record.id), &record.bytes());
    }

    /// Writes `bytes` to `requests/<name>` (0644).
    ///
    /// # Panics
    ///
    /// On an I/O error.
    pub fn write_raw(&self, name: &str, bytes: &[u8]) {
        let path = self.root.join("requests").join(name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .open(&path)
            .unwrap();
        file.write_all(bytes).unwrap();
    }

    /// Appends `JSON.stringify({at, event, id, ...fields}) + "\n"` to `audit.jsonl` (0644).
    ///
    /// # Panics
    ///
    /// On an I/O error, or if `fields` is not an object.
    pub fn log(&self, at_ms: i64, event: &str, id: &str, fields: &serde_json::Value) {
        let mut line = serde_json::Map::new();
        line.insert("at".into(), iso(at_ms).into());
        line.insert("event".into(), event.into());
        line.insert("id".into(), id.into());
        for (key, value) in fields.as_object().unwrap() {
            line.insert(key.clone(), value.clone());
        }
        let mut text = serde_json::to_string(&line).unwrap();
        text.push('\n');
        self.append_raw(text.as_bytes());
    }

    /// Appends `bytes` to `audit.jsonl` as they are.
    ///
    /// # Panics
    ///
    /// On an I/O error.
    pub fn append_raw(&self, bytes: &[u8]) {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o644)
            .open(self.root.join("audit.jsonl"))
            .unwrap();
        file.write_all(bytes).unwrap();
    }

    /// Files `record` as the predecessor does: its record, then its `requested` line.
    ///
    /// # Panics
    ///
    /// On an I/O error, or a `createdAt` that is no timestamp.
    pub fn file(&self, record: &OldRecord) {
        self.write(record);
        let mut fields = serde_json::json!({"action": record.action, "reason": record.reason});
        if let Some(who) = &record.requested_by {
            fields["requestedBy"] = who.clone().into();
        }
        let at = approval_gate::Timestamp::parse_rfc3339(&record.created_at).unwrap();
        self.log(at.unix_millis() + 1, "requested", &record.id, &fields);
    }

    /// Decides `record` (already filed pending) as the predecessor does: the rewritten record,
    /// then its line (`approved`/`denied` with the reason if one was given, `expired` with the
    /// action alone).
    ///
    /// # Panics
    ///
    /// If the record is not decided.
    pub fn decide(&self, record: &OldRecord) {
        self.write(record);
        let at =
            approval_gate::Timestamp::parse_rfc3339(record.decided_at.as_ref().unwrap()).unwrap();
        let mut fields = serde_json::json!({"action": record.action});
        if record.status != "expired"
            && let Some(reason) = &record.decision_reason
        {
            fields["reason"] = reason.clone().into();
        }
        self.log(at.unix_millis() + 1, &record.status, &record.id, &fields);
    }

    /// A store with one request of each kind, decided long ago or still pending at `now_ms`:
    /// `a00000000001` pending (an hour left), `a00000000002` approved, `a00000000003` denied,
    /// `a00000000004` expired, `a00000000005` pending past its expiry.
    #[must_use]
    pub fn sample(root: &Path, now_ms: i64) -> Self {
        let store = Self::create(root);
        let hour = 3_600_000;
        let mut pending =
            OldRecord::pending("a00000000001", "send email to alice", now_ms - 60_000, hour);
        pending.requested_by = Some("agent-1".into());
        store.file(&pending);
        let approved = OldRecord::pending("a00000000002", "pay 10 EUR", now_ms - 2 * hour, hour);
        store.file(&approved);
        store.decide(&approved.decided("approved", now_ms - 2 * hour + 5_000, Some("looks right")));
        let denied = OldRecord::pending("a00000000003", "delete x", now_ms - 2 * hour, hour);
        store.file(&denied);
        store.decide(&denied.decided("denied", now_ms - 2 * hour + 5_000, Some("wrong one")));
        let expired = OldRecord::pending("a00000000004", "delete y", now_ms - 3 * hour, 10_000);
        store.file(&expired);
        store.decide(&expired.decided("expired", now_ms - 3 * hour + 20_000, Some("TTL expired")));
        let overdue = OldRecord::pending("a00000000005", "delete z", now_ms - 3 * hour, 10_000);
        store.file(&overdue);
        store
    }
}

/// Every file under `root` with its bytes and mode, and every directory with its mode, in
/// path order: to show that nothing changed.
///
/// # Panics
///
/// On an I/O error.
#[must_use]
pub fn snapshot(root: &Path) -> Vec<(PathBuf, u32, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode();
        if meta.is_dir() {
            out.push((path.clone(), mode, None));
            for entry in std::fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
        } else {
            out.push((path.clone(), mode, Some(std::fs::read(&path).unwrap())));
        }
    }
    out.sort();
    out
}
