//! `approval-gate passkey enroll PRINCIPAL`: a one-time link that registers a passkey, and
//! the approvers-file line that trusts it.
//!
//! The command serves one page, at an address only it knows (a random token), until one
//! passkey is registered there or its time runs out. It changes nothing: it prints the
//! `allowed_signers` line on stdout, and the approvers file stays the operator's to edit. The
//! passkey is bound to the RP ID, the host name of the origin it was made on, so enroll on
//! the host name approvers will use (`--public-url`, with the server's certificate).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use clap::{Args, ValueHint};
use serde_json::json;

use super::bind;
use super::ceremony::{self, PostedRegistration};
use super::guard::Site;
use super::html::{self, Viewer};
use super::listen::{self, Origin};
use crate::term::Exit;
use crate::term::output;

/// Longest principal a passkey can carry: WebAuthn's user handle holds 64 bytes.
const MAX_USER_HANDLE: usize = 64;
/// Failed registrations (and wrong codes) taken before the link is closed.
const MAX_FAILURES: u32 = 5;
/// The code's alphabet: Crockford's base32, no I, L, O or U to misread.
const CODE_ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// `approval-gate passkey enroll`.
#[derive(Debug, Args)]
pub(crate) struct EnrollArgs {
    /// The approver's principal, as the approvers file will name them (alice@example.com).
    pub(crate) principal: String,
    /// Address to listen on. Without TLS only a loopback address is served.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8471")]
    pub(crate) listen: SocketAddr,
    /// The origin the link is opened at; its host name must be the one `serve` uses.
    #[arg(long, value_name = "URL")]
    pub(crate) public_url: Option<String>,
    /// The page this passkey will approve on: serve's origin, port included, which the line
    /// names (its approvals count on that page only). Default: serve's default,
    /// `http://localhost:8470`, or https:// and the host name of --public-url.
    #[arg(long, value_name = "URL")]
    pub(crate) serve_url: Option<String>,
    /// PEM certificate chain, as for serve.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// How long the link stays open (`15m`, `1h`).
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = humantime::parse_duration)]
    pub(crate) timeout: Duration,
}

/// One enrollment: its secrets, and what it came to.
struct Enrollment {
    principal: String,
    /// The origin the printed line names: where the passkey will approve.
    serve_origin: String,
    token: String,
    /// What the terminal shows beside the link and the human types on the page (not in the
    /// link): 8 characters of Crockford base32, 40 bits.
    code: String,
    challenge: [u8; 32],
    origin: Origin,
    state: Mutex<Outcome>,
    done: tokio::sync::Notify,
}

#[derive(Default)]
struct Outcome {
    line: Option<String>,
    failures: u32,
}

/// A principal a passkey can carry as its user handle.
fn check_principal(principal: &str) -> anyhow::Result<()> {
    if principal.is_empty()
        || principal.len() > MAX_USER_HANDLE
        || principal
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        bail!(
            "{:?}: a principal is 1 to {MAX_USER_HANDLE} bytes with no spaces (it is the \
             passkey's user handle)",
            crate::term::display::escape(principal)
        );
    }
    Ok(())
}

/// The enrollment's pages, behind the same guard as serve's.
fn router(enrollment: Arc<Enrollment>, tls: bool) -> axum::Router {
    let site = Arc::new(Site {
        origin: enrollment.origin.clone(),
        tls,
    });
    axum::Router::new()
        .route("/enroll/{token}", get(page).post(finish))
        .route("/enroll/{token}/options", post(options))
        .with_state(enrollment)
        .merge(super::guard::assets())
        .layer(axum::middleware::from_fn_with_state(
            site,
            super::guard::headers,
        ))
}

pub(crate) fn enroll(args: &EnrollArgs) -> anyhow::Result<Exit> {
    let principal = args.principal.trim();
    check_principal(principal)?;
    let tls = args.tls_cert.is_some();
    listen::check_address(args.listen, tls)?;
    let origin = Origin::resolve(args.public_url.as_deref(), args.listen, tls)?;
    // Port 0 asks for any free port: the origin then names the one given.
    let any_port = args.listen.port() == 0 && args.public_url.is_none();
    bind::check(args.listen, &origin, any_port)?;
    let serve_origin = serve_origin(args.serve_url.as_deref(), &origin)?;
    let mut secret = [0u8; 53];
    getrandom::fill(&mut secret).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the enrollment's runtime")?;
    let line = runtime.block_on(async {
        let acceptor = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(listen::tls_acceptor(cert, key)?),
            _ => None,
        };
        let tcp = bind::hold(args.listen).await?;
        let origin = if any_port {
            Origin::resolve(None, tcp[0].local_addr()?, tls)?
        } else {
            origin
        };
        let enrollment = Arc::new(Enrollment {
            principal: principal.to_owned(),
            serve_origin: serve_origin.clone(),
            token: B64.encode(&secret[..16]),
            challenge: secret[16..48].try_into().unwrap_or([0; 32]),
            code: code(&secret[48..]),
            origin: origin.clone(),
            state: Mutex::default(),
            done: tokio::sync::Notify::new(),
        });
        let router = router(enrollment.clone(), tls);
        output::stderr_line(&format!(
            "approval-gate: open this link in {}'s browser, once, within {}:\n    {}/enroll/{}\n\
             and type this code there: {}\n\
             (the code is not in the link: tell it to the approver another way, aloud for one; \
             relying party {}; the line to add to the approvers file is printed here, for \
             approving on {serve_origin})",
            crate::term::display::escape(principal),
            humantime::format_duration(args.timeout),
            origin.url,
            enrollment.token,
            shown(&enrollment.code),
            origin.rp_id
        ));
        let finished = async {
            tokio::select! {
                () = enrollment.done.notified() => true,
                () = tokio::time::sleep(args.timeout) => false,
            }
        };
        let enrolled = listen::serve_until(tcp, acceptor, router, finished)
            .await?
            .unwrap_or(false);
        let line = enrolled
            .then(|| lock(&enrollment.state).line.clone())
            .flatten();
        anyhow::Ok(line)
    })?;
    drop(runtime);
    match line {
        Some(line) => {
            output::stdout(&format!("{line}\n"))?;
            output::stderr_line(
                "approval-gate: passkey enrolled; add the line above to the approvers file \
                 (then restart serve)",
            );
            Ok(Exit::Done)
        }
        None => Err(crate::term::Refusal::new(
            "not_enrolled",
            "no passkey was enrolled before the link closed",
        )
        .into()),
    }
}

/// The origin the line names: `--serve-url`, or serve's default for the RP ID. It must be
/// on the enrollment's own RP ID (a passkey works on its RP ID only).
fn serve_origin(serve_url: Option<&str>, enrolling: &Origin) -> anyhow::Result<String> {
    let any = SocketAddr::from(([0, 0, 0, 0], 0));
    let default = if bind::loopback_name(&enrolling.rp_id) && enrolling.url.starts_with("http:") {
        format!("http://{}:8470", enrolling.rp_id)
    } else {
        format!("https://{}", enrolling.rp_id)
    };
    let text = serve_url.unwrap_or(&default);
    let origin = Origin::resolve(Some(text), any, true).context("--serve-url")?;
    if origin.rp_id != enrolling.rp_id {
        bail!(
            "--serve-url {text}: the passkey is made for {} (the link's host name), so it \
             approves on {} only; enroll on the host name serve uses",
            enrolling.rp_id,
            enrolling.rp_id
        );
    }
    Ok(origin.url)
}

/// The code of 5 random bytes: 8 characters of [`CODE_ALPHABET`].
fn code(random: &[u8]) -> String {
    let bits = random
        .iter()
        .take(5)
        .fold(0u64, |bits, &byte| bits << 8 | u64::from(byte));
    (0..8)
        .rev()
        .map(|i| char::from(CODE_ALPHABET[((bits >> (i * 5)) & 31) as usize]))
        .collect()
}

/// The code as the terminal shows it: `ABCD-EFGH`.
fn shown(code: &str) -> String {
    format!("{}-{}", &code[..4], &code[4..])
}

/// A typed code as the code: case, blanks and dashes ignored, and the letters Crockford's
/// base32 reads as digits (O as 0, I and L as 1).
fn typed(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| match c.to_ascii_uppercase() {
            'O' => '0',
            'I' | 'L' => '1',
            other => other,
        })
        .collect()
}

fn lock(state: &Mutex<Outcome>) -> std::sync::MutexGuard<'_, Outcome> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Enrollment {
    /// The token is this enrollment's, and the link is still open.
    fn open(&self, token: &str) -> Result<(), Response> {
        let state = lock(&self.state);
        let ours = blake3::hash(token.as_bytes()) == blake3::hash(self.token.as_bytes());
        if !ours || state.line.is_some() || state.failures >= MAX_FAILURES {
            return Err(answer(
                StatusCode::NOT_FOUND,
                "this enrollment link is not open (used, closed, or never made)",
            ));
        }
        Ok(())
    }

    /// The code typed on the page is the terminal's; a wrong one counts as a failure.
    fn typed_code(&self, text: &str) -> Result<(), Response> {
        let ours = blake3::hash(typed(text).as_bytes()) == blake3::hash(self.code.as_bytes());
        if ours {
            return Ok(());
        }
        let mut state = lock(&self.state);
        state.failures += 1;
        let left = MAX_FAILURES.saturating_sub(state.failures);
        drop(state);
        output::stderr_line("approval-gate: a wrong enrollment code was typed on the page");
        Err(answer(
            StatusCode::FORBIDDEN,
            &format!(
                "this is not the code the terminal shows beside the link: type that code \
                 ({left} tries left)"
            ),
        ))
    }

    fn same_origin(&self, headers: &HeaderMap) -> Result<(), Response> {
        let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
        if origin == Some(self.origin.url.as_str()) {
            Ok(())
        } else {
            Err(answer(
                StatusCode::FORBIDDEN,
                "a request from another origin is not accepted here",
            ))
        }
    }
}

fn answer(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({ "ok": status.is_success(), "message": message })),
    )
        .into_response()
}

async fn page(State(enrollment): State<Arc<Enrollment>>, Path(token): Path<String>) -> Response {
    if let Err(closed) = enrollment.open(&token) {
        return closed;
    }
    let viewer = Viewer { principal: None };
    let body = html::enroll(&enrollment.principal, &token);
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        html::page("Enroll a passkey", &viewer, &body),
    )
        .into_response()
}

/// What the page posts for the options: the code the human typed.
#[derive(serde::Deserialize)]
struct Typed {
    #[serde(default)]
    code: String,
}

/// What `navigator.credentials.create` needs, once the code typed is the terminal's.
async fn options(
    State(enrollment): State<Arc<Enrollment>>,
    Path(token): Path<String>,
    headers: HeaderMap,
    Json(typed): Json<Typed>,
) -> Response {
    if let Err(refused) = enrollment
        .open(&token)
        .and_then(|()| enrollment.same_origin(&headers))
        .and_then(|()| enrollment.typed_code(&typed.code))
    {
        return refused;
    }
    Json(json!({
        "ok": true,
        "rpId": enrollment.origin.rp_id,
        "principal": enrollment.principal,
        "userId": B64.encode(enrollment.principal.as_bytes()),
        "challenge": B64.encode(enrollment.challenge),
    }))
    .into_response()
}

/// Checks the registration, made with the terminal's code; on success the command prints
/// the line and ends.
async fn finish(
    State(enrollment): State<Arc<Enrollment>>,
    Path(token): Path<String>,
    headers: HeaderMap,
    Json(posted): Json<PostedRegistration>,
) -> Response {
    if let Err(refused) = enrollment
        .open(&token)
        .and_then(|()| enrollment.same_origin(&headers))
        .and_then(|()| enrollment.typed_code(&posted.code))
    {
        return refused;
    }
    let origin = &enrollment.origin;
    let registered = ceremony::register(&posted, &enrollment.challenge, &origin.url, &origin.rp_id);
    let mut state = lock(&enrollment.state);
    match registered {
        Ok(registered) => {
            let line = registered.passkey.allowed_signers_line(
                &enrollment.principal,
                &registered.credential_id,
                &enrollment.serve_origin,
            );
            match line {
                Ok(line) => {
                    state.line = Some(line);
                    drop(state);
                    enrollment.done.notify_one();
                    answer(
                        StatusCode::OK,
                        "Passkey created. The operator adds the line approval-gate printed to \
                         the approvers file; then it can sign in and approve.",
                    )
                }
                Err(error) => answer(StatusCode::BAD_REQUEST, &error.to_string()),
            }
        }
        Err(problem) => {
            state.failures += 1;
            output::stderr_line(&format!(
                "approval-gate: a registration was refused: {}",
                crate::term::display::escape(&problem)
            ));
            answer(
                StatusCode::BAD_REQUEST,
                &format!("the passkey was not enrolled: {problem}"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_is_40_bits_of_crockford_base32_and_is_read_as_typed() {
        assert_eq!(code(&[0; 5]), "00000000");
        assert_eq!(code(&[0xff; 5]), "ZZZZZZZZ");
        assert_eq!(code(&[0x08, 0x86, 0x42, 0x98, 0xe8]), "12345678");
        assert_eq!(shown("ABCD2345"), "ABCD-2345");
        assert_eq!(typed(" abcd-2345 "), "ABCD2345");
        assert_eq!(typed("o1l1-i0O0"), "01111000");
        assert_ne!(typed("ABCD-2346"), "ABCD2345");
    }
}
