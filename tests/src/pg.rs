//! A `PostgreSQL` server for the tests of the `PostgreSQL` store, and fresh databases on it.
//!
//! [`admin_url`] is the server's superuser URL: `APPROVAL_GATE_TEST_PG` when set (`.ci/run`
//! starts a cluster and sets it), else a private throwaway cluster started once per test
//! process with `.ci/postgres` and stopped by a watchdog when the process exits. In CI
//! (`CI` set) the tests never start their own: a missing server is a failure, not a skip.
//!
//! Everything here runs the synchronous `postgres` client on a thread of its own, since it
//! panics on a thread that is inside a tokio runtime: every function is safe to call from
//! anywhere, async tests included.

use std::collections::hash_map::RandomState;
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use postgres::{Client, NoTls};

/// The environment variable naming a running server's superuser URL.
pub const ENV: &str = "APPROVAL_GATE_TEST_PG";

/// The superuser URL of a running server, `postgres://USER@HOST:PORT/DB` (trust
/// authentication, no password): `APPROVAL_GATE_TEST_PG` if set and non-empty, else a private
/// cluster started on the first call in this process.
///
/// # Panics
///
/// In CI (`CI` set) without `APPROVAL_GATE_TEST_PG`, or if the private cluster cannot start.
#[must_use]
pub fn admin_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| match std::env::var(ENV) {
        Ok(url) if !url.is_empty() => url,
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the PostgreSQL tests never skip in CI: .ci/run starts a cluster and sets \
                 {ENV}, which is not set here"
            );
            start_private_cluster()
        }
    })
}

/// A new, empty database with a unique name, owned by the superuser; its URL.
///
/// # Panics
///
/// If the server refuses.
#[must_use]
pub fn create_database() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "ag_{}_{}_{:08x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        random_u64() as u32
    );
    let admin = admin_url();
    run_sql(admin, &format!("CREATE DATABASE {name}"));
    let user = parse(admin).user;
    url_with(admin, user, Some(&name))
}

/// Drops the database of `url` (made by [`create_database`]), ending its sessions first; no
/// error if it is already gone.
///
/// # Panics
///
/// If the server refuses.
pub fn drop_database(url: &str) {
    let name = parse(url).database.replace('"', "\"\"");
    run_sql(
        admin_url(),
        &format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"),
    );
}

/// `url` with another user, and another database if `database` is `Some`: for logging in
/// as other roles (trust authentication, no password).
///
/// # Panics
///
/// If `url` is not of the form `postgres://USER@HOST:PORT/DB`.
#[must_use]
pub fn url_with(url: &str, user: &str, database: Option<&str>) -> String {
    let parts = parse(url);
    format!(
        "{}{user}@{}/{}{}",
        parts.scheme,
        parts.host_port,
        database.unwrap_or(parts.database),
        parts.query
    )
}

/// Runs `sql` (any number of statements, no parameters) on a new connection to `url`.
///
/// # Panics
///
/// If it cannot connect or a statement fails, with the server's message, detail and hint.
pub fn run_sql(url: &str, sql: &str) {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    on_own_thread(move || {
        let mut client = connect(&url);
        if let Err(e) = client.batch_execute(&sql) {
            panic!("SQL failed on {url}: {}\n--- SQL:\n{sql}", describe(&e));
        }
    });
}

/// A connection to `url`, for tests that need to run queries of their own.
///
/// The client blocks on a runtime of its own: use it on a thread outside any tokio runtime
/// (or wrap the calls in [`on_own_thread`]).
///
/// # Panics
///
/// If it cannot connect.
#[must_use]
pub fn connect(url: &str) -> Client {
    Client::connect(url, NoTls)
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {}", describe(&e)))
}

/// Runs `f` on a new plain thread and returns what it returns (re-raising its panic), so
/// that the synchronous `postgres` client can be used from inside a tokio runtime.
pub fn on_own_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f)
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// A `postgres` error with everything the server said about it.
fn describe(e: &postgres::Error) -> String {
    let Some(db) = e.as_db_error() else {
        return e.to_string();
    };
    let mut out = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
    if let Some(detail) = db.detail() {
        out.push_str("\nDETAIL: ");
        out.push_str(detail);
    }
    if let Some(hint) = db.hint() {
        out.push_str("\nHINT: ");
        out.push_str(hint);
    }
    if let Some(position) = db.position() {
        let _ = write!(out, "\nPOSITION: {position:?}");
    }
    out
}

/// The pieces of `postgres://USER@HOST:PORT/DB[?QUERY]`.
struct Url<'a> {
    scheme: &'a str,
    user: &'a str,
    host_port: &'a str,
    database: &'a str,
    /// Empty, or `?` and the rest.
    query: &'a str,
}

fn parse(url: &str) -> Url<'_> {
    fn bad<T>(url: &str) -> T {
        panic!("not a postgres://USER@HOST:PORT/DB URL: {url}")
    }
    let scheme_end = url.find("://").unwrap_or_else(|| bad(url)) + 3;
    let (scheme, rest) = url.split_at(scheme_end);
    let (user, rest) = rest.split_once('@').unwrap_or_else(|| bad(url));
    let (host_port, rest) = rest.split_once('/').unwrap_or_else(|| bad(url));
    let (database, query) = rest.split_at(rest.find('?').unwrap_or(rest.len()));
    if user.is_empty() || host_port.is_empty() || database.is_empty() {
        bad::<()>(url);
    }
    Url {
        scheme,
        user,
        host_port,
        database,
        query,
    }
}

/// 64 bits from the standard library's per-process random hash keys: enough to keep database
/// names apart between runs, without another dependency.
fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

/// The workspace's `.ci/postgres`.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .join(".ci/postgres")
}

/// A server of a test's own, for tests that stop or restart it, and for the benchmarks
/// (which want PostgreSQL's durable defaults). Stopped and removed when dropped, and by a
/// watchdog if this process ends first.
#[derive(Debug)]
pub struct Cluster {
    url: String,
    dir: PathBuf,
}

impl Cluster {
    /// Starts one on a free loopback port; `durable` keeps fsync and synchronous commits on.
    ///
    /// # Panics
    ///
    /// If it cannot start.
    #[must_use]
    pub fn start(durable: bool) -> Self {
        let (url, dir) = start_cluster(durable);
        Self { url, dir }
    }

    /// Its superuser URL.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Stops the server and starts it again with the same settings: every session ends.
    ///
    /// # Panics
    ///
    /// If it does not come back.
    pub fn restart(&self) {
        let status = Command::new("bash")
            .arg(script())
            .arg("restart")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .expect("run bash .ci/postgres restart");
        assert!(status.success(), "restarting the cluster failed: {status}");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Starts a cluster in a new temporary directory on a free loopback port, and a watchdog that
/// stops it (and removes the directory) once this process has exited; the cluster's URL.
fn start_private_cluster() -> String {
    start_cluster(false).0
}

/// [`start_private_cluster`], durable or not; the URL and the cluster's directory.
fn start_cluster(durable: bool) -> (String, PathBuf) {
    let script = script();
    let mut failures = String::new();
    // The port is free when picked, but another process may take it before the server binds
    // it: try again on another.
    for _ in 0..3 {
        let dir = tempfile::Builder::new()
            .prefix("ag-pg")
            .tempdir()
            .expect("a temporary directory for the cluster")
            .keep();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let output = Command::new("bash")
            .env("AG_PG_DURABLE", if durable { "1" } else { "0" })
            .arg(&script)
            .arg("start")
            .arg(&dir)
            .arg(port.to_string())
            .stdin(Stdio::null())
            .output()
            .expect("run bash .ci/postgres start");
        if output.status.success() {
            watch(&script, &dir);
            let stdout = String::from_utf8_lossy(&output.stdout);
            let url = stdout
                .lines()
                .last()
                .expect(".ci/postgres start prints the URL")
                .to_owned();
            return (url, dir);
        }
        let _ = write!(
            failures,
            "--- {} start {} {port}: {}\n{}",
            script.display(),
            dir.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let _ = Command::new("bash")
            .arg(&script)
            .arg("stop")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    panic!(
        "could not start a private PostgreSQL cluster (set {ENV} to use a running server):\n\
         {failures}"
    );
}

/// A detached shell that waits for this process to exit, then stops the cluster in `dir`. In
/// a process group of its own, so the Ctrl-C that ends `cargo test` does not end it too.
#[expect(
    clippy::zombie_processes,
    reason = "it must outlive this process, which never waits for it; init reaps it"
)]
fn watch(script: &Path, dir: &Path) {
    Command::new("sh")
        .arg("-c")
        .arg(r#"while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec bash "$2" stop "$3""#)
        .arg("ag-pg-watchdog")
        .arg(std::process::id().to_string())
        .arg(script)
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn the cluster's watchdog");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_database_answers_and_is_dropped() {
        let url = create_database();
        assert_ne!(url, admin_url());
        run_sql(&url, "select 1");
        let name = parse(&url).database.to_owned();
        let owner = url_with(&url, "postgres", None);
        assert_eq!(owner, url);
        let count = |name: String| {
            on_own_thread(move || {
                connect(admin_url())
                    .query_one(
                        "select count(*) from pg_database where datname = $1",
                        &[&name],
                    )
                    .expect("query pg_database")
                    .get::<_, i64>(0)
            })
        };
        assert_eq!(count(name.clone()), 1);
        drop_database(&url);
        assert_eq!(count(name), 0);
        drop_database(&url);
    }

    #[tokio::test]
    async fn safe_inside_a_runtime() {
        let url = create_database();
        run_sql(&url, "create table t (x int); insert into t values (1)");
        drop_database(&url);
    }

    #[test]
    #[should_panic(expected = "ERROR 42P01: relation \"nowhere\" does not exist")]
    fn a_failing_statement_panics_with_the_servers_message() {
        run_sql(admin_url(), "select * from nowhere");
    }

    #[test]
    fn url_with_swaps_the_user_and_database() {
        let url = "postgres://postgres@127.0.0.1:5432/postgres";
        assert_eq!(
            url_with(url, "alice", None),
            "postgres://alice@127.0.0.1:5432/postgres"
        );
        assert_eq!(
            url_with(url, "alice", Some("db")),
            "postgres://alice@127.0.0.1:5432/db"
        );
    }
}
