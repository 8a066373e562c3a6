//! `approval-gate serve` and `approval-gate passkey enroll`: approving from a browser, with
//! passkeys.
//!
//! The server is a peer of the CLI over the same library and store: it lists what is pending
//! (live, from the store's change feed), shows a request in full with the terminal's
//! escaping, and takes decisions. An approval is a WebAuthn assertion whose challenge is the
//! digest of the request's decision statement, made by a passkey the approvers file trusts
//! for the approver's principal; the gate verifies it before recording it, and the executor
//! verifies it again, offline, before it counts. The server keeps nothing of its own but, in
//! memory, the sessions signed out and a count of refused sign-ins per address: sessions are
//! MAC'd cookies, so instances sharing a key file and a store can stand behind one load
//! balancer (each remembers only the sign-outs it took).

mod allow;
mod allow_html;
mod app;
mod bind;
mod ceremony;
mod conn;
mod cookies;
mod cosign;
mod cosign_html;
mod decide;
mod enroll;
mod guard;
mod html;
mod limit;
mod listen;
mod refused;
mod session;
mod signin;
mod state;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::{Args, ValueHint};

pub(crate) use self::enroll::{EnrollArgs, enroll};
use self::listen::Origin;
#[cfg(test)]
pub(crate) use self::refused::gate_refusal;
use crate::settings::Settings;
use crate::term::Exit;

/// `approval-gate serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on. Without TLS only a loopback address is served.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8470")]
    pub(crate) listen: SocketAddr,
    /// The address approvers open (`--help` says it all).
    #[arg(
        long,
        value_name = "URL",
        help = "The address approvers open, an origin such as `https://approvals.example.com`: \
            its host name is the passkeys' relying party. Default: $APPROVAL_GATE_PUBLIC_URL, \
            else `public_url` in the config file, else http://localhost:PORT on loopback"
    )]
    pub(crate) public_url: Option<String>,
    /// PEM certificate chain: serve HTTPS (needed on any address but loopback).
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// 64 hex digits (`openssl rand -hex 32`, mode 600) that sign session cookies: give every
    /// instance behind one load balancer the same file. Default: a new key per start, so a
    /// restart signs everybody out.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub(crate) session_key_file: Option<PathBuf>,
}

/// The origin of a `--public-url` given to another command (`watch`), checked as serve
/// checks it.
pub(crate) fn public_origin(text: &str) -> anyhow::Result<String> {
    let any = SocketAddr::from(([0, 0, 0, 0], 0));
    Ok(Origin::resolve(Some(text), any, true)?.url)
}

/// `approval-gate serve`: runs until SIGINT or SIGTERM.
pub(crate) fn serve(settings: &Settings, args: &ServeArgs) -> anyhow::Result<Exit> {
    let tls = args.tls_cert.is_some();
    listen::check_address(args.listen, tls)?;
    // The flag wins over the setting (the variable, then the config file).
    let public_url = args
        .public_url
        .as_deref()
        .or(settings.public_url.value.as_deref());
    let origin = Origin::resolve(public_url, args.listen, tls)?;
    // Port 0 asks for any free port: the origin then names the one given.
    let any_port = args.listen.port() == 0 && public_url.is_none();
    bind::check(args.listen, &origin, any_port)?;
    let Some(policy) = settings.policy.clone() else {
        bail!(
            "serve needs the approvers file (--approvers or APPROVAL_GATE_APPROVERS): approvals \
             on the page are passkey signatures that it must trust"
        );
    };
    if !policy.has_passkeys() {
        bail!(
            "the approvers file holds no passkey: enroll one with `approval-gate passkey enroll \
             PRINCIPAL` and add the line it prints"
        );
    }
    let keys = match &args.session_key_file {
        Some(path) => session::Keys::load(path).map_err(anyhow::Error::msg)?,
        None => session::Keys::random().context("no randomness for the session key")?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the server's runtime")?;
    // Every address first: a start refused for one opens no store.
    let tcp = runtime.block_on(bind::hold(args.listen))?;
    let origin = if any_port {
        Origin::resolve(None, tcp[0].local_addr()?, tls)?
    } else {
        origin
    };
    if !policy.has_passkeys_on(&origin.url) {
        bail!(
            "the approvers file trusts no passkey on {}: a passkey's line names the one page it \
             approves on (`origin:{}`); enroll with `approval-gate passkey enroll PRINCIPAL \
             --serve-url {}`, or serve where the lines say",
            origin.url,
            origin.url,
            origin.url
        );
    }
    let gate = settings.open()?;
    runtime.block_on(async {
        let acceptor = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(listen::tls_acceptor(cert, key)?),
            _ => None,
        };
        let bound = bind::addresses(&tcp);
        let app = Arc::new(state::App {
            gate: gate.clone(),
            policy,
            keys,
            origin: origin.url.clone(),
            host: origin.host.clone(),
            rp_id: origin.rp_id.clone(),
            tls,
            changes: feed(&gate),
            limiter: limit::Limiter::default(),
            signed_out: session::SignedOut::default(),
        });
        crate::term::output::stderr_line(&format!(
            "approval-gate: serving {} on {bound} for the store {} (Ctrl-C to stop)",
            origin.url,
            crate::term::display::escape(&gate.location().to_string())
        ));
        listen::serve_until(tcp, acceptor, app::router(app), stopped()).await?;
        anyhow::Ok(())
    })?;
    Ok(Exit::Done)
}

/// Resolves on SIGINT or SIGTERM. Open event streams do not end by themselves, so the server
/// stops at once rather than wait for them.
async fn stopped() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
}

/// The store's change hints as a counter the event streams follow: a thread of its own
/// blocks on the library's feed (events, with its fallback re-read), and each hint, or each
/// burst of them, bumps the counter once.
fn feed(gate: &approval_gate::Gate) -> tokio::sync::watch::Receiver<u64> {
    let watch = gate.watch();
    if let Some(why) = watch.polling() {
        crate::term::output::stderr_line(&format!(
            "approval-gate: warning: no change events ({}); the page refreshes every {} s",
            crate::term::display::escape(why),
            watch.fallback().as_secs()
        ));
    }
    let mut changes = watch.changes();
    let (send, receive) = tokio::sync::watch::channel(0u64);
    std::thread::spawn(move || {
        let _watch = watch;
        let mut seen = 0u64;
        while changes.next().is_some() {
            while changes.try_next().is_some() {}
            seen += 1;
            if send.send(seen).is_err() {
                break;
            }
        }
    });
    receive
}
