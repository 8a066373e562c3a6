//! The operator's settings reach the server from its own environment, flags and config file,
//! and nothing an agent sends changes them.

use std::path::Path;
use std::process::Stdio;

use tokio::process::Command;

use serde_json::json;

use crate::support::{
    BIN, Kind, Session, assert_unchanged, backend, kind, operator_settings_of_this_test_only,
};

fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// The default config file of a server whose config home (`XDG_CONFIG_HOME`) is `home`.
fn config_file(home: &Path) -> std::path::PathBuf {
    home.join("approval-gate").join("config.toml")
}

#[tokio::test]
async fn the_queue_cap_is_the_operators() {
    let session = Session::start_configured(None, |command, _, _| {
        command.env("APPROVAL_GATE_MAX_PENDING", "1");
    })
    .await;
    session.request("the only one").await;
    let refusal = session
        .call(
            "request_approval",
            json!({ "action": "a second one", "reason": "r" }),
        )
        .await
        .refused("queue_full");
    assert!(
        refusal["message"].as_str().unwrap().contains("(limit 1)"),
        "{refusal}"
    );
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_default_ttl_comes_from_the_config_file() {
    let session = Session::start_configured(None, |_, _, home| {
        write_private(
            &config_file(home),
            "default_ttl = \"15m\"\nmax_requests = 2\n",
        );
    })
    .await;
    let lifetime = |id| {
        let request = session.gate().status(id).unwrap().request().clone();
        request.created_at().millis_until(request.expires_at())
    };
    let unsaid = session.request("no ttl given").await;
    assert_eq!(lifetime(unsaid), 15 * 60 * 1000);
    // A request's own TTL still applies; the operator's is the default.
    let said = session
        .call(
            "request_approval",
            json!({ "action": "ttl given", "reason": "r", "ttlSeconds": 60 }),
        )
        .await
        .ok();
    let said = said["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(lifetime(said), 60 * 1000);
    // And the creation limit is the file's too.
    session
        .call(
            "request_approval",
            json!({ "action": "a third", "reason": "r" }),
        )
        .await
        .refused("creation_limit");
    session.client.cancel().await.unwrap();
}

/// On the command line, as a URL: a directory store as a `file:` URL, a database as its own.
#[tokio::test]
async fn a_store_named_by_a_url_is_served() {
    let session = Session::start_configured(None, |command, store, _| {
        let url = match kind() {
            Kind::Dir => format!(
                "file://{}",
                approval_gate_tests::backend::Directory::dir(store)
                    .to_str()
                    .unwrap()
            ),
            Kind::Postgres => store.location().to_owned(),
        };
        command
            .env_remove("APPROVAL_GATE_STORE")
            .arg("--store")
            .arg(url);
    })
    .await;
    let id = session.request("through --store").await;
    assert_eq!(
        session.gate().status(id).unwrap().request().action(),
        "through --store"
    );
    session.client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_settings_stop_the_server_before_it_opens_anything() {
    for (args, env, message) in [
        (
            vec!["--store", "mysql://db/approvals"],
            None,
            "--store: the scheme \"mysql\" names no store this build has",
        ),
        (
            vec![],
            Some(("APPROVAL_GATE_STORE", "https://example.com/store")),
            "APPROVAL_GATE_STORE: the scheme \"https\"",
        ),
        (
            vec![],
            Some(("APPROVAL_GATE_DEFAULT_TTL", "forever")),
            "APPROVAL_GATE_DEFAULT_TTL: \"forever\" is not a duration",
        ),
        (
            vec![],
            Some(("APPROVAL_GATE_MAX_REQUESTS", "0")),
            "APPROVAL_GATE_MAX_REQUESTS: \"0\" is not a whole number",
        ),
        (
            vec!["--store", "/x", "--dir", "/y"],
            None,
            "cannot be used with",
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        // Not created for a directory store: the server must not create it.
        let store = backend().fresh();
        let before = backend().contents(&store);
        let mut command = Command::new(BIN);
        command.args(&args).stdin(Stdio::null());
        operator_settings_of_this_test_only(&mut command, home.path());
        command.env("APPROVAL_GATE_STORE", store.location());
        if let Some((name, value)) = env {
            command.env(name, value);
        }
        let output = command.output().await.unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?} {env:?}: {stderr}");
        assert!(stderr.contains(message), "{stderr}");
        assert!(output.stdout.is_empty(), "stdout is the protocol's");
        assert_unchanged(&store, &before, &format!("{args:?} {env:?}"));
    }

    // A bad config file, too: named with its key.
    let home = tempfile::tempdir().unwrap();
    let store = backend().fresh();
    let before = backend().contents(&store);
    let file = config_file(home.path());
    write_private(&file, "max_pending = 10\nqueue = 5\n");
    let mut command = Command::new(BIN);
    command.stdin(Stdio::null());
    operator_settings_of_this_test_only(&mut command, home.path());
    command.env("APPROVAL_GATE_STORE", store.location());
    let output = command.output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "config file {}: unknown key \"queue\"",
            file.display()
        )),
        "{stderr}"
    );
    assert_unchanged(&store, &before, "a bad config file");
}
