//! | tool | does | annotations |
//! |---|---|---|
//! | `request_approval` | files a pending request bound to action, operation and payload | additive, idempotent (de-duplicated) |
//! | `check_approval` | reports `status` and `effectiveStatus` | read-only |
//! | `wait_for_approval` | returns when a human decides, the request expires, or the timeout passes | read-only |
//! | `list_pending` | one page of pending requests and a `nextAfter` cursor | read-only |
//! | `consume_approval` | spends an approval once, for exactly what was approved | destructive |
//! | `decide_approval` | denies; `approve: true` is refused | destructive |
//!
//! Every answer carries `authorizesExecution: false`; every refusal is a tool result with
//! `isError: true` and a stable `code`. The tools reach the store through a gate that has no
//! approve or revoke at all, so no call or sequence of calls can approve a request. See
//! `docs/mcp.md` for each tool's arguments, answers and refusals.
//!
//! The binary `approval-gate-mcp` serves stdin and stdout with [`run`](crate::mcp::run);
//! [`serve`](crate::mcp::serve) serves any byte streams, one JSON-RPC message per line:
//!
//! ```
//! use approval_gate::Gate;
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let gate = Gate::open(dir.path().join("approvals"))?;
//! let (mut to_server, server_in) = tokio::io::duplex(64 * 1024);
//! let (server_out, from_server) = tokio::io::duplex(64 * 1024);
//! let serving = tokio::spawn(approval_gate_mcp::mcp::serve(gate, server_in, server_out));
//!
//! let mut lines = BufReader::new(from_server).lines();
//! for message in [
//!     r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}"#,
//!     r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
//!     r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"decide_approval","arguments":{"id":"a1b2c3d4e5f6","approve":true}}}"#,
//! ] {
//!     to_server.write_all(format!("{message}\n").as_bytes()).await?;
//! }
//! let _initialized = lines.next_line().await?;
//! let answer: serde_json::Value = serde_json::from_str(&lines.next_line().await?.unwrap())?;
//! assert_eq!(answer["result"]["isError"], true);
//! assert_eq!(answer["result"]["structuredContent"]["code"], "approve_not_allowed");
//! assert_eq!(answer["result"]["structuredContent"]["authorizesExecution"], false);
//!
//! drop(to_server); // end of input: the server finishes cleanly
//! serving.await??;
//! # Ok(())
//! # }
//! ```

mod agent_gate;
mod answer;
#[cfg(test)]
pub(crate) use answer::advice;
mod inbound;
mod log;
mod page;
mod refusal;
mod server;
mod tools;
mod transport;
mod wait;

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use approval_gate::Gate;
use rmcp::service::{QuitReason, ServerInitializeError};
use tokio::io::{AsyncRead, AsyncWrite};

use self::log::ClientLog;
use self::page::PageLinks;
use self::server::Server;
use self::transport::StrictTransport;
use crate::settings::Flags;

/// The environment variable that names the origin of the approvers' web page, as
/// `--public-url` does.
pub use self::page::PUBLIC_URL_ENV;
/// The environment variable that sets the log filter (`tracing` `EnvFilter` syntax, e.g.
/// `debug` or `approval_gate_mcp=debug`); logs go to stderr, and only errors by default.
pub use approval_gate::settings::LOG_ENV;

/// Command-line options of `approval-gate-mcp`.
#[derive(Debug, Clone, Default, clap::Parser)]
#[command(
    name = "approval-gate-mcp",
    version,
    about = "The approval-gate MCP server, over stdio, for agents.",
    long_about = "The approval-gate MCP server, over stdio, for agents.\n\n\
        Agents may request, check, wait for, list, deny and consume approvals; they can never \
        approve. Humans decide with `approval-gate` in their own terminal.\n\n\
        Logs go to stderr (set APPROVAL_GATE_LOG, e.g. to `debug`); stdout carries only the \
        protocol.\n\n\
        The operator sets the store, the queue cap, the creation limit, the default TTL and \
        the quorum policy: flags, then APPROVAL_GATE_STORE / APPROVAL_GATE_DIR, \
        APPROVAL_GATE_MAX_PENDING, APPROVAL_GATE_MAX_REQUESTS, APPROVAL_GATE_DEFAULT_TTL, \
        APPROVAL_GATE_APPROVERS, APPROVAL_GATE_QUORUM, then the config file \
        (`approval-gate config --help`). Agents cannot change them. Under a policy a request \
        stays pending until enough trusted approvers have signed, and consume checks every \
        signature.\n\n\
        Exit status: 0 when the client closes the connection, 1 when the server cannot start \
        or keep serving, 2 on a usage error or a bad setting."
)]
pub struct Options {
    #[command(flatten)]
    settings: Flags,
    /// The origin of the approvers' web page, for the page links of URL-mode elicitation.
    #[arg(
        long,
        value_name = "URL",
        help = "The origin `approval-gate serve` is opened at (https://approvals.example.com) \
            [default: $APPROVAL_GATE_PUBLIC_URL, else `public_url` in the config file]. With it, wait_for_approval offers a client \
            that declared URL-mode elicitation the request's page link; the client's answer \
            decides nothing"
    )]
    public_url: Option<String>,
}

impl Options {
    /// Parses the command line, program name first (as [`std::env::args_os`] gives it).
    ///
    /// # Errors
    ///
    /// [`Usage`] for `--help`, `--version` and anything not understood.
    pub fn from_args<I, T>(args: I) -> Result<Self, Usage>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        <Self as clap::Parser>::try_parse_from(args).map_err(Usage)
    }

    /// Options that serve the store in `dir` (the other settings still come from the
    /// environment and the config file).
    #[must_use]
    pub fn with_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            settings: Flags {
                dir: Some(dir.into()),
                ..Flags::default()
            },
            public_url: None,
        }
    }
}

/// A command line that asks for help or version, or that is not understood.
#[derive(Debug)]
pub struct Usage(clap::Error);

impl Usage {
    /// Writes the help, version or error to stderr (stdout belongs to the protocol) and
    /// returns the exit code: 0 for help and version, 2 for an error.
    #[must_use]
    pub fn exit(&self) -> ExitCode {
        eprint!("{}", self.0.render());
        u8::try_from(self.0.exit_code()).map_or(ExitCode::FAILURE, ExitCode::from)
    }
}

/// Serves the store over stdin and stdout until the client closes stdin.
///
/// The store and its limits are the operator's settings, from `options`, the environment
/// and the config file (see `approval-gate config --help`).
///
/// Exit code 0 when the client closes the connection, 1 when the store cannot be opened or
/// the session fails, 2 for a bad setting (nothing is opened). Logs go to stderr, filtered
/// by [`LOG_ENV`], and to the client at the level it sets with `logging/setLevel`.
#[must_use]
pub fn run(options: &Options) -> ExitCode {
    let log = ClientLog::new();
    init_logging(&log);
    // The operator's settings, from this process's own flags, environment and config file;
    // no tool call can change them. A bad one is a usage error, and nothing is opened.
    let settings = match options.settings.resolve() {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("approval-gate-mcp: {e}");
            return ExitCode::from(2);
        }
    };
    // The flag, else the setting (the variable, then the config file).
    let public_url = options
        .public_url
        .clone()
        .or_else(|| settings.public_url.value.clone());
    let links = match public_url.as_deref().map(PageLinks::parse).transpose() {
        Ok(links) => links,
        Err(e) => {
            eprintln!("approval-gate-mcp: {e}");
            return ExitCode::from(2);
        }
    };
    let gate = match settings.open() {
        Ok(gate) => gate,
        Err(e) => {
            eprintln!("approval-gate-mcp: cannot open the approval store: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("approval-gate-mcp: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(serve_with_log(
        gate,
        tokio::io::stdin(),
        tokio::io::stdout(),
        log,
        links,
    ));
    // A read of stdin may still occupy a blocking thread; there is nothing left to wait for.
    runtime.shutdown_timeout(Duration::from_millis(100));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("approval-gate-mcp: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Serves the MCP protocol over `input` and `output`, one JSON-RPC message per line, until
/// `input` ends. Must run inside a tokio runtime; the store's file work runs on its blocking
/// pool.
///
/// The client may set a log level, but is sent no log: only [`run`] adds the server's log
/// to the process's `tracing` subscriber.
///
/// # Errors
///
/// If the session fails: output cannot be written, or the client breaks the protocol in a
/// way that ends the session (such as not opening it with `initialize`).
pub async fn serve<R, W>(gate: Gate, input: R, output: W) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with_log(gate, input, output, ClientLog::new(), None).await
}

async fn serve_with_log<R, W>(
    gate: Gate,
    input: R,
    output: W,
    log: ClientLog,
    links: Option<PageLinks>,
) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let transport = StrictTransport::new(input, output);
    let server = Server::new(gate, transport.input_ended(), log.clone(), links);
    let running = match rmcp::serve_server(server, transport).await {
        Ok(running) => running,
        // The client left before opening the session: nothing to serve, nothing wrong.
        Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(io::Error::other(e.to_string())),
    };
    log.send_to(running.peer().clone());
    match running.waiting().await {
        Ok(QuitReason::JoinError(e)) | Err(e) => Err(io::Error::other(e)),
        Ok(_) => Ok(()),
    }
}

fn init_logging(log: &ClientLog) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = match std::env::var(LOG_ENV) {
        Ok(directives) => tracing_subscriber::EnvFilter::try_new(&directives).unwrap_or_else(|e| {
            eprintln!("approval-gate-mcp: ignoring {LOG_ENV}={directives:?}: {e}");
            tracing_subscriber::EnvFilter::new("error")
        }),
        Err(_) => tracing_subscriber::EnvFilter::new("error"),
    };
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(io::stderr)
        .with_filter(filter);
    // A subscriber set by an embedding program wins.
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(log.layer())
        .try_init();
}
