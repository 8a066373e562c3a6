//! What the conformance suite needs from a backend, and the directory store's answer.
//!
//! A backend gives the suite throwaway stores and two looks of its own at one: what it holds
//! (to prove a refused operation changed nothing) and whether a claim was made (read from
//! its own storage, not through `Gate`, so the gate's answer has something to agree with).
//! Everything else the suite does through [`Gate`], the way a front end would; no test in
//! the suite knows where or how a backend keeps anything.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use approval_gate::{AuditEvent, Gate, GateBuilder, Limits, Location, ManualClock, RequestId};

/// A kind of store the conformance suite runs against.
pub trait Backend: Send + Sync {
    /// A new, empty store, removed when the value is dropped. Opening it creates it.
    fn fresh(&self) -> Store;

    /// A new, empty store for tests of logic, not durability (the model-based test runs
    /// thousands): a backend may make it cheaper. By default, [`Backend::fresh`].
    fn fresh_for_logic(&self) -> Store {
        self.fresh()
    }

    /// How many random operation sequences the model-based test runs by default (each on a
    /// fresh store); `APPROVAL_GATE_MODEL_CASES` overrides it. 2000 unless a backend's every
    /// step is a network round trip.
    fn model_cases(&self) -> u32 {
        2000
    }

    /// Waits until what a process that died held in `store` has been let go of. The
    /// directory store's locks go with the process; a database server notices a closed
    /// connection a moment later, and until then an execution it held looks alive (a later
    /// open would record it). Called by the crash tests before they reopen a store.
    fn settle(&self, store: &Store) {
        let _ = store;
    }

    /// Failpoints (as `FAILPOINTS` takes them, with `return(kill)`) inside this backend's
    /// own steps, where the crash matrix kills an executor on top of the lifecycle's own.
    fn kill_points(&self) -> &'static [&'static str];

    /// Everything `store` holds, by name, to compare before and after an operation that
    /// must change nothing. A store not created yet holds nothing.
    fn contents(&self, store: &Store) -> BTreeMap<String, Vec<u8>>;

    /// Whether `store` holds a spent claim on `id`, read from the backend's own storage.
    fn claimed(&self, store: &Store, id: RequestId) -> bool;

    /// Rewrites the live record of `id` as someone who can write the store directly (but
    /// holds no approver's key) could: `edit` gets the record in the directory store's JSON
    /// form (`status`, `decidedAt`, `approvals`: `[{principal, decidedBy, decidedAt,
    /// signature}]`, …) and changes it; the backend stores the result as it is.
    fn tamper(&self, store: &Store, id: RequestId, edit: &mut dyn FnMut(&mut serde_json::Value));

    /// Rewrites the kept record of allowance `id` (the signed allowance, as
    /// `SignedAllowance::to_json` writes it) as someone who can write the store directly
    /// could; the backend stores the result as it is.
    fn tamper_allowance(
        &self,
        store: &Store,
        id: RequestId,
        edit: &mut dyn FnMut(&mut serde_json::Value),
    );

    /// Deletes every use recorded of allowance `id`, as someone who can write the store
    /// directly could, to get its uses and budget back.
    fn forget_uses(&self, store: &Store, id: RequestId);

    /// Appends one audit line saying `event` happened to `id`, with `details`, as someone
    /// who can write the store directly and is careful to keep the chain whole: the line is
    /// linked and hashed as the store would, and its anchor (the head) moved to it. Only
    /// what the line *says* can give it away.
    fn forge_audit_line(
        &self,
        store: &Store,
        event: AuditEvent,
        id: RequestId,
        details: &serde_json::Map<String, serde_json::Value>,
    );

    /// Cuts the last line of the audit chain as someone who can write the store directly
    /// could, leaving its anchor naming a line the chain no longer has.
    fn cut_audit_tail(&self, store: &Store);

    /// Adds something to `store` that the store does not write (a file in a directory
    /// store, a table in the database's schema); the name its health check should give it.
    fn add_stray(&self, store: &Store) -> std::path::PathBuf;
}

/// A store to test: where it is, and whatever keeps it alive until dropped.
pub struct Store {
    location: Location,
    text: String,
    _keep: Box<dyn Send + Sync>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("at", &self.text)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// The store at `text` (as `--store` reads it), alive as long as `keep` is.
    ///
    /// # Panics
    ///
    /// If `text` is not a store location.
    #[must_use]
    pub fn new(text: impl Into<String>, keep: impl Send + Sync + 'static) -> Self {
        let text = text.into();
        let location = Location::parse(&text).expect("a store location");
        Self {
            location,
            text,
            _keep: Box::new(keep),
        }
    }

    /// Where the store is, as child processes are given it (`--store`,
    /// `APPROVAL_GATE_STORE`).
    #[must_use]
    pub fn location(&self) -> &str {
        &self.text
    }

    /// A builder for a gate on this store, to set a clock or limits.
    #[must_use]
    pub fn builder(&self) -> GateBuilder {
        Gate::builder().store(self.location.clone())
    }

    /// A gate on this store, on `clock` (default: the system clock) with `limits`.
    ///
    /// # Panics
    ///
    /// If the store cannot be opened.
    #[must_use]
    pub fn open(&self, clock: Option<ManualClock>, limits: Limits) -> Gate {
        let builder = self.builder().limits(limits);
        match clock {
            Some(clock) => builder.clock(clock),
            None => builder,
        }
        .open()
        .expect("open the store")
    }

    /// A gate on this store with the system clock and default limits.
    ///
    /// # Panics
    ///
    /// If the store cannot be opened.
    #[must_use]
    pub fn gate(&self) -> Gate {
        self.open(None, Limits::default())
    }
}

/// The directory store (`file:`), in a temporary directory.
#[derive(Debug, Clone, Copy, Default)]
pub struct Directory;

impl Directory {
    /// The directory store already at `dir`, left in place when dropped.
    ///
    /// # Panics
    ///
    /// If `dir` is not UTF-8.
    #[must_use]
    pub fn at(dir: &Path) -> Store {
        Store::new(dir.to_str().expect("a UTF-8 path"), ())
    }

    /// The state directory of a directory store.
    ///
    /// # Panics
    ///
    /// If `store` is not a directory store.
    #[must_use]
    pub fn dir(store: &Store) -> PathBuf {
        match &store.location {
            Location::Dir(dir) => dir.clone(),
            other => panic!("not a directory store: {other}"),
        }
    }

    fn fresh_in(tmp: tempfile::TempDir) -> Store {
        let dir = tmp.path().join("gate");
        Store::new(dir.to_str().expect("a UTF-8 temporary path"), tmp)
    }
}

impl Backend for Directory {
    fn fresh(&self) -> Store {
        Self::fresh_in(tempfile::tempdir().expect("tempdir"))
    }

    fn fresh_for_logic(&self) -> Store {
        // Memory where the machine offers it: the test checks logic, not durability.
        let shm = Path::new("/dev/shm");
        match shm.is_dir().then(|| tempfile::tempdir_in(shm)) {
            Some(Ok(tmp)) => Self::fresh_in(tmp),
            _ => self.fresh(),
        }
    }

    fn kill_points(&self) -> &'static [&'static str] {
        // The exclusive create of the claim (killed with its name made and its content not
        // yet written), and each commit of a line through the journal: `consumed`,
        // `execution_started`, `execution_finished`, so each occurrence gets its own entry.
        &[
            "fs::create_exclusive::before_write=return(kill)",
            "audit::before_write=return(kill)",
            "audit::before_sync=return(kill)",
            "audit::before_head=return(kill)",
            "audit::before_write=1*off->return(kill)",
            "audit::before_sync=1*off->return(kill)",
            "audit::before_head=1*off->return(kill)",
            "audit::before_write=2*off->return(kill)",
            "audit::before_sync=2*off->return(kill)",
            "audit::before_head=2*off->return(kill)",
        ]
    }

    fn contents(&self, store: &Store) -> BTreeMap<String, Vec<u8>> {
        let dir = Self::dir(store);
        if !dir.exists() {
            return BTreeMap::new();
        }
        let mut contents: BTreeMap<String, Vec<u8>> = crate::snapshot(&dir)
            .into_iter()
            .map(|(path, bytes)| (format!("/{}", path.display()), bytes))
            .collect();
        // The directory itself: a store created empty is not one never created.
        contents.insert("/".into(), b"<dir>".to_vec());
        contents
    }

    fn claimed(&self, store: &Store, id: RequestId) -> bool {
        Self::dir(store)
            .join("claims")
            .join(format!("{id}.used"))
            .exists()
    }

    fn tamper(&self, store: &Store, id: RequestId, edit: &mut dyn FnMut(&mut serde_json::Value)) {
        let path = Self::dir(store).join("requests").join(format!("{id}.json"));
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read the record"))
                .expect("a JSON record");
        edit(&mut record);
        std::fs::write(&path, serde_json::to_vec(&record).expect("JSON"))
            .expect("write the record");
    }

    fn tamper_allowance(
        &self,
        store: &Store,
        id: RequestId,
        edit: &mut dyn FnMut(&mut serde_json::Value),
    ) {
        let path = Self::dir(store)
            .join("allowances")
            .join(format!("{id}.json"));
        let mut record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read the allowance"))
                .expect("a JSON record");
        edit(&mut record);
        std::fs::write(&path, serde_json::to_vec(&record).expect("JSON"))
            .expect("write the allowance");
    }

    fn forget_uses(&self, store: &Store, id: RequestId) {
        let path = Self::dir(store)
            .join("allowances")
            .join(format!("{id}.uses"));
        std::fs::write(&path, b"").expect("empty the uses");
    }

    fn forge_audit_line(
        &self,
        store: &Store,
        event: AuditEvent,
        id: RequestId,
        details: &serde_json::Map<String, serde_json::Value>,
    ) {
        // The line format of `approval-gate/src/audit.rs`: `{"seq":..,"ts":..,"event":..,
        // "id":..,<details>,"prev":".."` and then `,"hash":"<BLAKE3 of all that>"}`.
        let dir = Self::dir(store);
        let log = dir.join("audit.jsonl");
        let text = std::fs::read_to_string(&log).expect("read the audit log");
        let last: serde_json::Value =
            serde_json::from_str(text.lines().last().expect("a line to chain onto"))
                .expect("a JSON line");
        let seq = last["seq"].as_u64().expect("a sequence number") + 1;
        // Built by hand: a `serde_json::Map` would put the fields in alphabetical order.
        let details = serde_json::Value::Object(details.clone()).to_string();
        let details = match &details[1..details.len() - 1] {
            "" => String::new(),
            fields => format!(",{fields}"),
        };
        let prefix = format!(
            "{{\"seq\":{seq},\"ts\":{},\"event\":{},\"id\":\"{id}\"{details},\"prev\":{}",
            last["ts"],
            serde_json::to_value(event).expect("an event"),
            last["hash"],
        );
        let hash = blake3::hash(prefix.as_bytes()).to_hex();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .expect("open the audit log");
        std::io::Write::write_all(
            &mut file,
            format!("{prefix},\"hash\":\"{hash}\"}}\n").as_bytes(),
        )
        .expect("append the forged line");
        std::fs::write(dir.join("audit.head"), format!("{seq:020} {hash}\n"))
            .expect("move the anchor");
    }

    fn cut_audit_tail(&self, store: &Store) {
        let log = Self::dir(store).join("audit.jsonl");
        let text = std::fs::read_to_string(&log).expect("read the audit log");
        let kept = text
            .trim_end_matches('\n')
            .rsplit_once('\n')
            .map_or("", |(kept, _)| kept);
        let kept = if kept.is_empty() {
            String::new()
        } else {
            format!("{kept}\n")
        };
        std::fs::write(&log, kept).expect("cut the audit log");
    }

    fn add_stray(&self, store: &Store) -> PathBuf {
        let stray = PathBuf::from("requests").join("notes.txt");
        std::fs::write(Self::dir(store).join(&stray), "left here by hand").expect("a stray file");
        stray
    }
}

/// The PostgreSQL store (`postgres://`): each store a new database on the test server
/// ([`crate::pg`]), copied from a template that `db init` prepared once per process, and
/// dropped with the store.
#[derive(Debug, Clone, Copy, Default)]
pub struct Postgres;

/// Databases of stores that were dropped, emptied for the next [`Backend::fresh`]: copying
/// the template takes about 100 ms, emptying one about 10, and the suite makes thousands.
static SPARE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Numbers the copies of the template made in this process.
static COPIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Hands a test database back to [`SPARE`] when dropped.
struct Spare(String);

impl Drop for Spare {
    fn drop(&mut self) {
        SPARE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(self.0.clone());
    }
}

/// Drops the test databases (`ag_<pid>_…`) of test processes of this machine that have ended:
/// spares are never dropped by the process that made them, which cannot run code at exit.
fn drop_stale_databases() {
    let admin = crate::pg::admin_url().to_owned();
    let names: Vec<String> = crate::pg::on_own_thread(move || {
        let mut client = crate::pg::connect(&admin);
        client
            .query(
                "SELECT datname FROM pg_database WHERE datname LIKE 'ag\\_%' AND NOT datistemplate",
                &[],
            )
            .expect("list the test databases")
            .iter()
            .map(|row| row.get(0))
            .collect()
    });
    for name in names {
        let pid = name
            .strip_prefix("ag_")
            .and_then(|rest| rest.split('_').next())
            .and_then(|pid| pid.parse::<u32>().ok());
        let ended = pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
        if ended {
            let url = crate::pg::url_with(crate::pg::admin_url(), "postgres", Some(&name));
            crate::pg::drop_database(&url);
        }
    }
}

/// Empties a spare database: ends every other session on it (and so the advisory locks they
/// hold), then removes every row, resets the audit head, and drops the stray table
/// [`Backend::add_stray`] makes.
fn empty(url: &str) {
    crate::pg::run_sql(
        url,
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid();
         TRUNCATE approval_gate.requests, approval_gate.audit, approval_gate.allowance_uses,
             approval_gate.allowances;
         UPDATE approval_gate.audit_head
             SET seq = 0, hash = '0000000000000000000000000000000000000000000000000000000000000000';
         UPDATE approval_gate.filing_slots SET live = 0;
         DROP TABLE IF EXISTS approval_gate.notes;",
    );
}

impl Postgres {
    /// The URL of a store's database.
    ///
    /// # Panics
    ///
    /// If `store` is not a PostgreSQL store.
    #[must_use]
    pub fn url(store: &Store) -> String {
        match &store.location {
            Location::Postgres(url) => url.clone(),
            other => panic!("not a PostgreSQL store: {other}"),
        }
    }

    /// A database with the schema of this build (made by `db init` once per process), which
    /// [`Backend::fresh`] copies.
    ///
    /// # Panics
    ///
    /// If the server refuses.
    #[must_use]
    pub fn template() -> &'static str {
        static TEMPLATE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        TEMPLATE.get_or_init(|| {
            drop_stale_databases();
            let url = crate::pg::create_database();
            let init = url.clone();
            crate::pg::on_own_thread(move || approval_gate::postgres::init(&init))
                .expect("db init on the template database");
            url
        })
    }

    /// Runs SQL as the superuser on the store's database and returns the rows, each column
    /// as text.
    ///
    /// # Panics
    ///
    /// If `store` is not a PostgreSQL store or the query fails.
    #[must_use]
    pub fn query(store: &Store, sql: &str) -> Vec<Vec<Option<String>>> {
        let url = Self::url(store);
        let sql = sql.to_owned();
        crate::pg::on_own_thread(move || {
            let mut client = crate::pg::connect(&url);
            client
                .simple_query(&sql)
                .expect("the query")
                .into_iter()
                .filter_map(|message| match message {
                    postgres::SimpleQueryMessage::Row(row) => Some(
                        (0..row.len())
                            .map(|i| row.get(i).map(str::to_owned))
                            .collect(),
                    ),
                    _ => None,
                })
                .collect()
        })
    }
}

impl Backend for Postgres {
    fn fresh(&self) -> Store {
        let spare = SPARE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        if let Some(url) = spare {
            empty(&url);
            return Store::new(url.clone(), Spare(url));
        }
        let template = Self::template();
        let name = template.rsplit('/').next().expect("a database name");
        let copy = format!(
            "{name}_{}",
            COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let admin = crate::pg::admin_url();
        crate::pg::run_sql(admin, &format!("CREATE DATABASE {copy} TEMPLATE {name}"));
        let user = template
            .split_once("://")
            .and_then(|(_, rest)| rest.split_once('@'))
            .map_or("postgres", |(user, _)| user);
        let url = crate::pg::url_with(template, user, Some(&copy));
        Store::new(url.clone(), Spare(url))
    }

    fn model_cases(&self) -> u32 {
        // Every step is a few round trips to the server (about 50 times the directory store's
        // cost on tmpfs); 400 sequences of up to 40 steps keep it near a minute in CI.
        400
    }

    fn settle(&self, store: &Store) {
        // Until the server has ended the dead process's session, its execution lock is held.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            let held = Self::query(
                store,
                "SELECT count(*) FROM pg_locks
                 WHERE locktype = 'advisory' AND classid = 1095192401 AND granted
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            );
            if held.first().and_then(|row| row[0].as_deref()) == Some("0") {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    fn kill_points(&self) -> &'static [&'static str] {
        // Each step is one transaction: a kill lands before or after it, which the
        // lifecycle's own points already cover.
        &[]
    }

    fn contents(&self, store: &Store) -> BTreeMap<String, Vec<u8>> {
        // Every committed row sealed first, as any read of the chain does (a broken chain,
        // which refuses to be sealed onto, is read as it is; so is one whose head row another
        // session holds past a bounded wait, as a test of a jam does on purpose).
        let _ = Self::query(
            store,
            "DO $$ BEGIN SET LOCAL lock_timeout = '2s'; PERFORM approval_gate.seal(true); \
             EXCEPTION WHEN OTHERS THEN NULL; END $$",
        );
        let rows = Self::query(
            store,
            "SELECT 'requests/' || id, row_to_json(r)::text FROM approval_gate.requests r
             UNION ALL SELECT 'audit/' || coalesce(seq::text, 'unsealed-' || pos),
                 coalesce(line, event || ' ' || details::text) FROM approval_gate.audit
             UNION ALL SELECT 'head', seq || ' ' || hash FROM approval_gate.audit_head WHERE seq > 0",
        );
        rows.into_iter()
            .map(|row| {
                let mut row = row.into_iter();
                let key = row.next().flatten().expect("a key");
                let value = row.next().flatten().unwrap_or_default();
                (key, value.into_bytes())
            })
            .collect()
    }

    fn claimed(&self, store: &Store, id: RequestId) -> bool {
        let rows = Self::query(
            store,
            &format!("SELECT claimed_ms IS NOT NULL FROM approval_gate.requests WHERE id = '{id}'"),
        );
        rows.first()
            .and_then(|row| row.first().cloned().flatten())
            .is_some_and(|v| v == "t")
    }

    fn tamper(&self, store: &Store, id: RequestId, edit: &mut dyn FnMut(&mut serde_json::Value)) {
        let rows = Self::query(
            store,
            &format!("SELECT record::text, payload FROM approval_gate.requests WHERE id = '{id}'"),
        );
        let row = rows.first().expect("the request's row");
        let mut record: serde_json::Value =
            serde_json::from_str(row[0].as_deref().expect("a record")).expect("JSON");
        record["payload"] = match row[1].as_deref() {
            Some(text) => serde_json::from_str(text).expect("a JSON payload"),
            None => serde_json::Value::Null,
        };
        edit(&mut record);
        let payload = record
            .as_object_mut()
            .and_then(|fields| fields.remove("payload"))
            .filter(|p| !p.is_null())
            .map(|p| p.to_string());
        let quote = |text: &str| format!("'{}'", text.replace('\'', "''"));
        let status = record["status"].as_str().unwrap_or("pending").to_owned();
        let sql = format!(
            "UPDATE approval_gate.requests SET record = {}::jsonb, payload = {}, status = {} WHERE id = '{id}'",
            quote(&record.to_string()),
            payload.as_deref().map_or("NULL".to_owned(), quote),
            quote(&status),
        );
        let _ = Self::query(store, &sql);
    }

    fn tamper_allowance(
        &self,
        store: &Store,
        id: RequestId,
        edit: &mut dyn FnMut(&mut serde_json::Value),
    ) {
        let rows = Self::query(
            store,
            &format!("SELECT record::text FROM approval_gate.allowances WHERE id = '{id}'"),
        );
        let row = rows.first().expect("the allowance's row");
        let mut record: serde_json::Value =
            serde_json::from_str(row[0].as_deref().expect("a record")).expect("JSON");
        edit(&mut record);
        let sql = format!(
            "UPDATE approval_gate.allowances SET record = '{}'::jsonb WHERE id = '{id}'",
            record.to_string().replace('\'', "''"),
        );
        let _ = Self::query(store, &sql);
    }

    fn forget_uses(&self, store: &Store, id: RequestId) {
        let _ = Self::query(
            store,
            &format!(
                "DELETE FROM approval_gate.allowance_uses WHERE allowance = '{id}';
                 UPDATE approval_gate.allowances SET uses = 0, spent = 0 WHERE id = '{id}'"
            ),
        );
    }

    fn forge_audit_line(
        &self,
        store: &Store,
        event: AuditEvent,
        id: RequestId,
        details: &serde_json::Map<String, serde_json::Value>,
    ) {
        // A row as a step appends it, then sealed into the chain by the database itself.
        let event = serde_json::to_value(event).expect("an event");
        let details = serde_json::Value::Object(details.clone()).to_string();
        let sql = format!(
            "INSERT INTO approval_gate.audit (at_ms, id, event, details)
                 SELECT coalesce(max(at_ms), 0), '{id}', '{}', '{}'::jsonb FROM approval_gate.audit;
             SELECT approval_gate.seal(true);",
            event.as_str().expect("an event name"),
            details.replace('\'', "''"),
        );
        let _ = Self::query(store, &sql);
    }

    fn cut_audit_tail(&self, store: &Store) {
        let _ = Self::query(
            store,
            // Sealed first, as a read would: the last line is the last step's, even when a
            // burst of steps left its row to a later seal.
            "SELECT approval_gate.seal(true);
             DELETE FROM approval_gate.audit WHERE seq = (SELECT max(seq) FROM approval_gate.audit)",
        );
    }

    fn add_stray(&self, store: &Store) -> PathBuf {
        let _ = Self::query(store, "CREATE TABLE approval_gate.notes (note text)");
        PathBuf::from("approval_gate.notes")
    }
}
