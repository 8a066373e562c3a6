//! `--allowance KEY`: the human's side of the smtp example's allowance, done here so the
//! example runs in one terminal. The approver's key signs "up to 3 invoices to any
//! @example.com address, for the next 24 hours" as the approver's own tool would (the
//! statement's bytes, SSHSIG namespace `approval-gate`, as `approval-gate approve --key`
//! signs a decision), and the gate keeps it only if the signature counts under the
//! executor's policy. In real use the human signs in their own terminal, never the executor:
//! `approval-gate --approvers FILE allow smtp.send --matches '/to=*@example.com' --uses 3
//! --key KEY this month's invoices` makes the same allowance, shown in words and confirmed
//! by a re-typed code before it is signed. The example stays self-contained so that it runs
//! in one terminal without the CLI.

use std::path::Path;
use std::time::Duration;

use approval_gate::allowance::{
    Allowance, AllowanceSignature, Bounds, Constraint, SignedAllowance, Terms, Test,
};
use approval_gate::{AllowanceReport, Clock as _, Gate, Policy, SshKeygen, SystemClock};

/// How many invoices the allowance lets go out without asking.
pub(crate) const USES: u32 = 3;

/// Signs, with the approver key `key` (its principal read from `policy` by `KEY.pub`), and
/// grants the allowance; the gate's report of it.
pub(crate) fn grant(
    gate: &Gate,
    policy: &Policy,
    key: &Path,
) -> Result<AllowanceReport, Box<dyn std::error::Error>> {
    let mut public = key.as_os_str().to_owned();
    public.push(".pub");
    let public = std::path::PathBuf::from(public);
    let public = std::fs::read_to_string(&public)
        .map_err(|e| format!("--allowance: cannot read {}: {e}", public.display()))?;
    let principal = match policy.principals_of(&public)?.as_slice() {
        [one] => one.clone(),
        _ => {
            return Err(format!(
                "--allowance: the approvers file must list {} once, under one principal",
                key.display()
            )
            .into());
        }
    };
    let now = SystemClock.now();
    let allowance = Allowance::new(
        Terms {
            operation: "smtp.send".into(),
            constraints: vec![Constraint::new("/to", Test::Glob("*@example.com".into()))?],
            bounds: Bounds {
                uses: Some(USES),
                budget: None,
                rate: None,
                not_before: now,
                not_after: now.saturating_add(Duration::from_secs(24 * 3600)),
            },
            agent: None,
            reason: "this month's invoices".into(),
        },
        now,
    )?;
    let required = policy.required_approvals(Some("smtp.send"));
    if required > 1 {
        return Err(format!("--allowance signs with one key, and smtp.send needs {required} approvers: give --quorum 1").into());
    }
    let signature = SshKeygen::system().sign(key, &allowance.statement(&principal, required)?)?;
    Ok(gate.allow(SignedAllowance {
        allowance,
        required,
        signatures: vec![AllowanceSignature {
            principal,
            signature,
        }],
    })?)
}
