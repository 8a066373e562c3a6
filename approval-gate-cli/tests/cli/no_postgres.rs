//! A build without the `postgres` feature (`--no-default-features`): `db init` refuses by
//! name, saying how to get a build that has it, and touches nothing.

use std::process::{Command, Stdio};

use crate::support::{BIN, operator_settings_of_this_test_only};

#[test]
fn db_init_in_a_build_without_postgres_refuses_by_name() {
    let scratch = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    command
        .args([
            "--store",
            "postgres://nobody@127.0.0.1:9/none",
            "db",
            "init",
            "--json",
        ])
        .env_remove("APPROVAL_GATE_DIR")
        .env_remove("APPROVAL_GATE_STORE")
        .stdin(Stdio::null());
    operator_settings_of_this_test_only(&mut command, scratch.path());
    let output = command.output().expect("the CLI runs");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["error"]["code"], "no_postgres", "{report}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("no PostgreSQL store"),
        "{output:?}"
    );
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
}
