//! How the CLI, `exec` and the web page treat each library error code: pinned in
//! `approval_gate_tests::treatment` (one table for every front end), checked here.

use approval_gate_tests::treatment::{
    PINNED, assert_matches_the_table_without_a_wildcard, code, sample,
};

#[test]
fn the_cli_exits_as_it_did_for_every_code() {
    for &(name, exit, ..) in PINNED {
        let error = sample(code(name));
        assert_eq!(crate::term::gate_exit(&error).code(), exit, "{name}");
    }
}

#[test]
fn exec_exits_as_it_did_for_every_code() {
    for &(name, _, exec, ..) in PINNED {
        let error = anyhow::Error::new(sample(code(name))).context("exec");
        assert_eq!(crate::cli::exec::exit_code(&error), exec, "{name}");
    }
}

#[cfg(feature = "web")]
#[test]
fn the_web_answers_the_status_it_did_for_every_code() {
    for &(name, _, _, status, _) in PINNED {
        let error = sample(code(name));
        assert_eq!(
            crate::web::gate_refusal(&error).0.as_u16(),
            status,
            "{name}"
        );
    }
}

/// Each treatment is one exhaustive match on the class or family, without a wildcard.
#[test]
fn each_front_end_matches_the_table_without_a_wildcard() {
    for (file, source, function) in [
        (
            "term/exit.rs",
            include_str!("term/exit.rs"),
            "pub(crate) fn gate_exit(",
        ),
        (
            "cli/exec/mod.rs",
            include_str!("cli/exec/mod.rs"),
            "fn gate_code(",
        ),
    ] {
        assert_matches_the_table_without_a_wildcard(file, source, function);
    }
    // Read as text, so it is held with or without the `web` feature.
    assert_matches_the_table_without_a_wildcard(
        "web/refused.rs",
        include_str!("web/refused.rs"),
        "pub(crate) fn gate_refusal(",
    );
}
