//! The gate: the library's `Gate`, every store call on libuv's thread pool.

use std::path::PathBuf;
use std::time::Duration;

use approval_gate::settings::{Flags, Settings};
use approval_gate::{Decision, Error, Gate, Grant, Location, NewRequest, RequestId, StatusReport};
use napi::Env;
use napi::bindgen_prelude::{AsyncTask, Object};
use napi_derive::napi;
use serde_json::{Value, json};

use crate::binding::{BindingInput, binding};
use crate::execute;
use crate::grant::NativeGrant;
use crate::{Job, canonical, parse_id, to_js};

/// How to open a gate: the layer of the CLI's flags. Whatever is not given comes from the
/// environment, the config file and the defaults, as the library's settings resolve them for
/// every front end; the system policy holds whatever they say.
#[napi(object)]
#[derive(Default)]
pub struct OpenOptions {
    /// `--store`: a directory, a `file:` URL or a `postgres://` URL.
    pub store: Option<String>,
    /// `--dir`: the store directory.
    pub dir: Option<String>,
    /// `--config`: the operator's config file, instead of the default one.
    pub config: Option<String>,
    /// `--approvers`: an OpenSSH `allowed_signers` file.
    pub approvers: Option<String>,
    /// `--quorum`: such as `payments.*=2,*=1`.
    pub quorum: Option<String>,
    /// Seconds a request lives unless it asks for less, instead of the settings'.
    pub default_ttl_seconds: Option<f64>,
}

/// Seconds as a `Duration`, refusing what is negative or not a number.
fn seconds(field: &'static str, value: f64) -> Result<Duration, Error> {
    Duration::try_from_secs_f64(value).map_err(|_| Error::InvalidInput {
        field,
        problem: format!("must be a non-negative number of seconds, not {value}"),
    })
}

/// Opens a gate with the operator's settings (resolved by the library exactly as the CLI
/// resolves them), on libuv's pool; recovers the store after any crash, as every open does.
#[napi]
pub fn open_gate(options: Option<OpenOptions>) -> AsyncTask<Job<NativeGate>> {
    let options = options.unwrap_or_default();
    Job::spawn(move || open(options).map_err(|e| to_js(&e)))
}

fn open(options: OpenOptions) -> Result<NativeGate, Error> {
    let flags = Flags {
        store: options.store,
        dir: options.dir.map(PathBuf::from),
        config: options.config.map(PathBuf::from),
        approvers: options.approvers.map(PathBuf::from),
        quorum: options.quorum,
    };
    let settings = Settings::resolve(&flags).map_err(|e| Error::InvalidInput {
        field: "settings",
        problem: e.to_string(),
    })?;
    let mut limits = settings.limits();
    if let Some(ttl) = options.default_ttl_seconds {
        limits = limits.default_ttl(seconds("defaultTtlSeconds", ttl)?);
    }
    let builder = Gate::builder().store(settings.store.value).limits(limits);
    let gate = match settings.policy {
        Some(policy) => builder.policy(policy),
        None => builder,
    }
    .open()?;
    Ok(NativeGate { gate })
}

/// A new request, as the agent's side files it.
#[napi(object)]
pub struct RequestInput {
    /// What will be done, in words the human reads.
    pub action: String,
    /// Why.
    pub reason: String,
    /// The operation name.
    pub operation: Option<String>,
    /// The payload as JSON text.
    pub payload: Option<String>,
    /// Seconds until it expires.
    pub ttl_seconds: Option<f64>,
    /// Who asks.
    pub requested_by: Option<String>,
}

/// The approval gate over a store: requests, decisions, single-use consumes and executions.
/// Made by `openGate`; every method returns a Promise.
#[napi]
pub struct NativeGate {
    gate: Gate,
}

/// A report as the JSON text every front end shows.
fn report_text(report: &StatusReport) -> Result<String, Error> {
    serde_json::to_string(report).map_err(|e| Error::InvalidInput {
        field: "report",
        problem: e.to_string(),
    })
}

impl NativeGate {
    /// A store call on libuv's pool.
    fn job<T: Send + 'static>(
        &self,
        work: impl FnOnce(Gate) -> Result<T, Error> + Send + 'static,
    ) -> AsyncTask<Job<T>>
    where
        Job<T>: napi::Task,
    {
        let gate = self.gate.clone();
        Job::spawn(move || work(gate).map_err(|e| to_js(&e)))
    }

    /// A decision on request `id`: the request as it now stands.
    fn decide(
        &self,
        id: String,
        by: String,
        reason: Option<String>,
        make: fn(&Gate, RequestId, &Decision) -> Result<StatusReport, Error>,
    ) -> AsyncTask<Job<String>> {
        self.job(move |gate| {
            let id = RequestId::parse(&id)?;
            let mut decision = Decision::by(by);
            if let Some(reason) = reason {
                decision = decision.reason(reason);
            }
            report_text(&make(&gate, id, &decision)?)
        })
    }
}

#[napi]
impl NativeGate {
    /// Where the store is (a PostgreSQL URL is shown without its password).
    #[napi(getter)]
    pub fn location(&self) -> String {
        match self.gate.location() {
            Location::Dir(dir) => dir.display().to_string(),
            other => format!("{other}"),
        }
    }

    /// Files a request for a human decision: JSON text `{id, deduplicated, report}`.
    #[napi]
    pub fn request_approval(&self, input: RequestInput) -> AsyncTask<Job<String>> {
        self.job(move |gate| {
            let mut new = NewRequest::new(input.action, input.reason);
            if let Some(operation) = input.operation {
                new = new.operation(operation);
            }
            if let Some(payload) = input.payload {
                new = new.payload(canonical(&payload)?);
            }
            if let Some(ttl) = input.ttl_seconds {
                new = new.ttl(seconds("ttlSeconds", ttl)?);
            }
            if let Some(who) = input.requested_by {
                new = new.requested_by(who);
            }
            let submitted = gate.request_approval(new)?;
            let id = submitted.request.id();
            let report = gate.status(id)?;
            let text = json!({
                "id": id.as_str(),
                "deduplicated": submitted.deduplicated,
                "report": serde_json::to_value(&report).unwrap_or(Value::Null),
            });
            Ok(text.to_string())
        })
    }

    /// Where request `id` stands, as the report's JSON text. Never an authorization.
    #[napi]
    pub fn check(&self, id: String) -> AsyncTask<Job<String>> {
        self.job(move |gate| report_text(&gate.status(RequestId::parse(&id)?)?))
    }

    /// The human's side: approves request `id` as `by` (trusted operator code only).
    #[napi]
    pub fn approve(
        &self,
        id: String,
        by: String,
        reason: Option<String>,
    ) -> AsyncTask<Job<String>> {
        self.decide(id, by, reason, Gate::approve)
    }

    /// The human's side: denies request `id` as `by`.
    #[napi]
    pub fn deny(&self, id: String, by: String, reason: Option<String>) -> AsyncTask<Job<String>> {
        self.decide(id, by, reason, Gate::deny)
    }

    /// The human's side: revokes the approval of request `id` before it is used.
    #[napi]
    pub fn revoke(&self, id: String, by: String, reason: Option<String>) -> AsyncTask<Job<String>> {
        self.decide(id, by, reason, Gate::revoke)
    }

    /// Consumes the approval of request `id`, bound to exactly this action, operation and
    /// payload: the library's `Gate::consume`. Resolves to the native grant.
    #[napi]
    pub fn consume(
        &self,
        id: String,
        input: BindingInput,
    ) -> napi::Result<AsyncTask<Job<NativeGrant>>> {
        let id = parse_id(&id)?;
        Ok(self.job(move |gate| {
            let binding = binding(&gate, id, input)?;
            let grant: Grant<Value> = gate.consume(id, &binding)?;
            NativeGrant::new(&gate, &grant)
        }))
    }

    /// Starts an execution of request `id` (the library's `Gate::execute_approved`, on a
    /// thread of this module): resolves once `execution_started` is durable and the expiry
    /// re-checked, to the execution whose `finish` records the outcome; rejects, running
    /// nothing, on any refusal.
    #[napi]
    pub fn begin_execution<'env>(
        &self,
        env: &'env Env,
        id: String,
        input: BindingInput,
    ) -> napi::Result<Object<'env>> {
        let id = parse_id(&id)?;
        execute::begin(env, self.gate.clone(), id, input)
    }

    /// Makes the audit log agree with the claims after a crash (every open does it too):
    /// the ids whose execution outcome is now recorded as unknown.
    #[napi]
    pub fn recover(&self) -> AsyncTask<Job<Vec<String>>> {
        self.job(|gate| {
            let recovery = gate.recover()?;
            Ok(recovery
                .unknown_outcomes
                .iter()
                .map(|id| id.as_str().to_owned())
                .collect())
        })
    }

    /// Every line of the audit log, as JSON text of an array.
    #[napi]
    pub fn audit_records(&self) -> AsyncTask<Job<String>> {
        self.job(|gate| {
            let records = gate.audit_records()?;
            serde_json::to_string(&records).map_err(|e| Error::InvalidInput {
                field: "audit",
                problem: e.to_string(),
            })
        })
    }

    /// Verifies the audit log's chain: its number of lines.
    #[napi]
    pub fn verify_audit(&self) -> AsyncTask<Job<u32>> {
        self.job(|gate| Ok(u32::try_from(gate.verify_audit()?.lines).unwrap_or(u32::MAX)))
    }
}
