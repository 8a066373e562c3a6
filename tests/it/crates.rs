//! The agent's crate has no path to the human's: `approval-gate-mcp` never depends on
//! `approval-gate-cli`, directly or through another crate, so the agent's binary cannot
//! contain the approve screen, the web page or the signing code, and its binary holds none of
//! their code.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

/// Every package `package` reaches through normal and build dependencies (what its library
/// and binaries are built from; dev-dependencies build only its tests), itself included, on
/// this platform: `cargo tree`'s answer, from the lock file alone.
fn reach(package: &str) -> BTreeSet<String> {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            package,
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(["--locked", "--offline"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_agents_crate_has_no_path_to_the_humans() {
    let agent = reach("approval-gate-mcp");
    assert!(agent.contains("approval-gate"), "{agent:?}");
    assert!(agent.contains("rmcp"), "{agent:?}");
    // Neither the human's crate nor what only its web page, WebAuthn and terminal need.
    for human in [
        "approval-gate-cli",
        "axum",
        "hyper",
        "coset",
        "unicode-security",
        "clap_mangen",
    ] {
        assert!(!agent.contains(human), "approval-gate-mcp reaches {human}");
    }
    // The check can fail: the human's crate does reach them.
    let human = reach("approval-gate-cli");
    assert!(human.contains("axum") && human.contains("coset") && human.contains("clap_mangen"));
    assert!(!human.contains("approval-gate-mcp"), "{human:?}");
}

/// A binary of this workspace: `APPROVAL_GATE_CHECK_<NAME>` if set (CI points it at the
/// release build), else the one `cargo test` built next to this test.
fn binary(name: &str) -> PathBuf {
    let variable = format!(
        "APPROVAL_GATE_CHECK_{}",
        name.to_uppercase().replace('-', "_")
    );
    match std::env::var_os(&variable) {
        Some(path) => PathBuf::from(path),
        None => approval_gate_tests::workspace_binary(name),
    }
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[test]
fn the_agents_binary_holds_none_of_the_humans_code() {
    let agent = std::fs::read(binary("approval-gate-mcp")).unwrap();
    let human = std::fs::read(binary("approval-gate")).unwrap();
    // Symbols name their crate (`approval_gate_cli`), panic locations their source file
    // (`approval-gate-cli/src/...`); a crate's code brings at least one of them along.
    for trace in ["approval_gate_cli", "approval-gate-cli", "axum", "coset"] {
        assert!(contains(&human, trace), "the human's binary lacks {trace}");
        assert!(!contains(&agent, trace), "the agent's binary holds {trace}");
    }
    assert!(contains(&agent, "approval_gate_mcp"));
}
