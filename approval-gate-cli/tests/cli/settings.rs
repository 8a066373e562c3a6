//! The operator's settings: `config`, where each setting comes from, `--store`, and bad
//! settings refused before anything is opened.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::json;

use crate::support::{
    BIN, Store, assert_exit, assert_success, json, operator_settings_of_this_test_only, stderr,
    stdout,
};

/// A home and a config home of their own, with nothing in them yet.
struct Operator {
    tmp: tempfile::TempDir,
}

impl Operator {
    fn new() -> Self {
        Self {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// The default config file: `$XDG_CONFIG_HOME/approval-gate/config.toml`.
    fn config_file(&self) -> PathBuf {
        self.path("xdg").join("approval-gate").join("config.toml")
    }

    fn write_config(&self, text: &str) -> PathBuf {
        let path = self.config_file();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        write_private(&path, text);
        path
    }

    /// The CLI with only this operator's settings.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env_remove("APPROVAL_GATE_DIR")
            .env("HOME", self.path("home"))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        operator_settings_of_this_test_only(&mut command, &self.path("xdg"));
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Every entry under the operator's directory, to prove nothing was created.
    fn entries(&self) -> Vec<PathBuf> {
        let mut all = Vec::new();
        let mut dirs = vec![self.tmp.path().to_owned()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path.clone());
                }
                all.push(path.strip_prefix(self.tmp.path()).unwrap().to_owned());
            }
        }
        all.sort();
        all
    }
}

fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// The system policy file, which this machine has not.
const SYSTEM: &str = "/etc/approval-gate/policy.toml";

fn text(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

#[test]
fn config_prints_the_defaults_and_creates_nothing() {
    if Path::new(SYSTEM).exists() {
        eprintln!("skipped: this machine has a system policy, which every run obeys");
        return;
    }
    let operator = Operator::new();
    let output = operator.run(&["config", "--json"]);
    let home_store = text(&operator.path("home").join(".approval-gate"));
    assert_eq!(
        json(&output),
        json!({
            "config": {
                "path": text(&operator.config_file()),
                "found": false,
                "source": "default",
                "from": null,
            },
            "store": { "value": home_store, "source": "default", "from": null },
            "maxPending": { "value": 100, "source": "default", "from": null },
            "maxRequests": { "value": 10_000, "source": "default", "from": null },
            "defaultTtl": { "value": "1h", "seconds": 3600, "source": "default", "from": null },
            "approvers": { "value": null, "source": "default", "from": null },
            "quorum": { "value": {}, "source": "default", "from": null },
            "signingKey": { "value": null, "source": "default", "from": null },
            "sshKeygen": { "value": "/usr/bin/ssh-keygen", "source": "default", "from": null },
            "hooks": {
                "value": { "commands": [], "tools": [], "timeoutSeconds": 60 },
                "source": "default",
                "from": null,
            },
            "publicUrl": { "value": null, "source": "default", "from": null },
            // Issue 37, finding 11: none on this machine (checked above).
            "systemPolicy": null,
        })
    );
    assert_eq!(operator.entries(), Vec::<PathBuf>::new());
}

/// `config`'s line for the `[hooks]` table when the file has none.
const HOOKS_DEFAULT: [&str; 8] = [
    "hooks",
    "commands",
    "none;",
    "tools",
    "none;",
    "timeout",
    "1m",
    "(default)",
];

#[test]
fn config_says_where_each_setting_came_from() {
    let operator = Operator::new();
    let file_store = operator.path("file-store");
    let file = operator.write_config(&format!(
        "store = \"file://{}\"\nmax_pending = 5\nmax_requests = 50\ndefault_ttl = \"30m\"\n",
        text(&file_store)
    ));
    let file_name = text(&file);

    // The file alone.
    let from_file = json(&operator.run(&["config", "--json"]));
    assert_eq!(from_file["config"]["found"], true);
    assert_eq!(from_file["config"]["source"], "default");
    for key in ["store", "maxPending", "maxRequests", "defaultTtl"] {
        assert_eq!(from_file[key]["source"], "file", "{key}");
        assert_eq!(from_file[key]["from"], file_name.as_str(), "{key}");
    }
    assert_eq!(from_file["store"]["value"], text(&file_store));
    assert_eq!(from_file["maxPending"]["value"], 5);
    assert_eq!(from_file["maxRequests"]["value"], 50);
    assert_eq!(from_file["defaultTtl"]["value"], "30m");
    assert_eq!(from_file["defaultTtl"]["seconds"], 1800);

    // The environment over the file.
    let env_store = operator.path("env-store");
    let mut command = operator.command(&["config", "--json"]);
    command
        .env("APPROVAL_GATE_DIR", &env_store)
        .env("APPROVAL_GATE_MAX_PENDING", "7")
        .env("APPROVAL_GATE_DEFAULT_TTL", "2h");
    let from_env = json(&command.output().unwrap());
    assert_eq!(
        from_env["store"],
        json!({ "value": text(&env_store), "source": "env", "from": "APPROVAL_GATE_DIR" })
    );
    assert_eq!(
        from_env["maxPending"],
        json!({ "value": 7, "source": "env", "from": "APPROVAL_GATE_MAX_PENDING" })
    );
    assert_eq!(from_env["maxRequests"]["source"], "file");
    assert_eq!(
        from_env["defaultTtl"],
        json!({
            "value": "2h",
            "seconds": 7200,
            "source": "env",
            "from": "APPROVAL_GATE_DEFAULT_TTL",
        })
    );

    // A flag over both, and APPROVAL_GATE_STORE over APPROVAL_GATE_DIR.
    let flag_store = operator.path("flag-store");
    let mut command = operator.command(&["--dir", &text(&flag_store), "config", "--json"]);
    command.env("APPROVAL_GATE_STORE", text(&env_store));
    let from_flag = json(&command.output().unwrap());
    assert_eq!(
        from_flag["store"],
        json!({ "value": text(&flag_store), "source": "flag", "from": "--dir" })
    );
    let mut command = operator.command(&["config", "--json"]);
    command
        .env(
            "APPROVAL_GATE_STORE",
            format!("file://{}", text(&flag_store)),
        )
        .env("APPROVAL_GATE_DIR", &env_store);
    assert_eq!(
        json(&command.output().unwrap())["store"]["from"],
        "APPROVAL_GATE_STORE"
    );

    // The text form: one line per setting, its value, and its source.
    let mut command = operator.command(&["config"]);
    command.env("APPROVAL_GATE_MAX_REQUESTS", "77");
    let output = command.output().unwrap();
    assert_success(&output);
    let shown = stdout(&output);
    let lines: Vec<Vec<&str>> = shown
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    let file_source = format!("{file_name})");
    assert_eq!(
        lines,
        [
            vec!["config", &file_name, "(default)"],
            vec!["system", SYSTEM, "(default,", "not", "found)"],
            vec!["store", &text(&file_store), "(file", &file_source],
            vec!["max_pending", "5", "(file", &file_source],
            vec!["max_requests", "77", "(env", "APPROVAL_GATE_MAX_REQUESTS)"],
            vec!["default_ttl", "30m", "(file", &file_source],
            vec!["approvers", "none", "(default)"],
            vec!["quorum", "none", "(default)"],
            vec!["signing_key", "none", "(default)"],
            vec!["ssh_keygen", "/usr/bin/ssh-keygen", "(default)"],
            HOOKS_DEFAULT.to_vec(),
            vec!["public_url", "none", "(default)"],
        ],
        "{shown}"
    );
    // Nothing but the config file exists: no store was opened.
    assert_eq!(
        operator.entries(),
        [
            PathBuf::from("xdg"),
            PathBuf::from("xdg/approval-gate"),
            PathBuf::from("xdg/approval-gate/config.toml"),
        ]
    );
}

#[test]
fn a_config_file_can_be_named() {
    let operator = Operator::new();
    let named = operator.path("named.toml");
    write_private(&named, "max_pending = 3\n");
    let by_flag = json(&operator.run(&["--config", &text(&named), "config", "--json"]));
    assert_eq!(by_flag["config"]["source"], "flag");
    assert_eq!(by_flag["maxPending"]["value"], 3);

    let mut command = operator.command(&["config", "--json"]);
    command.env("APPROVAL_GATE_CONFIG", &named);
    let by_env = json(&command.output().unwrap());
    assert_eq!(by_env["config"]["from"], "APPROVAL_GATE_CONFIG");
    assert_eq!(by_env["maxPending"]["from"], text(&named));

    // Named, it must exist.
    let missing = operator.path("missing.toml");
    let output = operator.run(&["--config", &text(&missing), "list"]);
    assert_exit(&output, 2, "missing.toml (flag --config)");
}

#[test]
fn bad_settings_are_usage_errors_and_create_nothing() {
    for (config, env, args, message) in [
        (
            Some("max_pending = 5\nmax_pendng = 6\n"),
            None,
            vec![],
            "unknown key \"max_pendng\"",
        ),
        (
            Some("default_ttl = \"forever\"\n"),
            None,
            vec![],
            "default_ttl: \"forever\" is not a duration",
        ),
        (
            Some("max_requests = 0\n"),
            None,
            vec![],
            "max_requests: 0 is not a whole number from 1 up",
        ),
        (
            None,
            Some(("APPROVAL_GATE_MAX_PENDING", "lots")),
            vec![],
            "APPROVAL_GATE_MAX_PENDING: \"lots\" is not a whole number",
        ),
        (
            None,
            Some(("APPROVAL_GATE_DEFAULT_TTL", "1s")),
            vec![],
            "APPROVAL_GATE_DEFAULT_TTL: \"1s\" is outside 10s to 7days",
        ),
        (
            None,
            Some(("APPROVAL_GATE_STORE", "mysql://db/approvals")),
            vec![],
            "APPROVAL_GATE_STORE: the scheme \"mysql\" names no store this build has",
        ),
        (
            None,
            None,
            vec!["--store", "mysql://db/approvals"],
            "--store: the scheme \"mysql\" names no store this build has",
        ),
        (
            None,
            None,
            vec!["--store", "/x", "--dir", "/y"],
            "cannot be used with",
        ),
    ] {
        let operator = Operator::new();
        let file = config.map(|text| operator.write_config(text));
        let before = operator.entries();
        let store = operator.path("store");
        for command in [vec!["list"], vec!["config"], vec!["deny", "0123456789ab"]] {
            let mut line = args.clone();
            line.extend(command);
            let mut run = operator.command(&line);
            run.env("APPROVAL_GATE_DIR", &store);
            if let Some((name, value)) = env {
                run.env(name, value);
            }
            let output = run.output().unwrap();
            assert_exit(&output, 2, message);
            if let Some(file) = &file {
                let named = format!("config file {}: ", file.display());
                assert!(stderr(&output).contains(&named), "{}", stderr(&output));
            }
            assert_eq!(stdout(&output), "", "{line:?}");
            assert_eq!(operator.entries(), before, "{line:?} created something");
        }
    }
}

#[test]
fn a_store_named_by_a_file_url_is_used() {
    let store = Store::new();
    let request = store.ask("filed through the library");
    let url = format!("file://{}", text(&store.path));
    let operator = Operator::new();
    let by_flag = operator.run(&["--store", &url, "show", request.id().as_str()]);
    assert_success(&by_flag);
    assert!(stdout(&by_flag).contains("filed through the library"));

    let mut by_env = operator.command(&["deny", request.id().as_str(), "not today"]);
    by_env.env("APPROVAL_GATE_STORE", &url);
    assert_success(&by_env.output().unwrap());
    assert_eq!(
        store
            .gate()
            .status(request.id())
            .unwrap()
            .effective_status(),
        approval_gate::EffectiveStatus::Denied
    );
    // The same store, named in the config file.
    operator.write_config(&format!("store = {url:?}\n"));
    let listed = json(&operator.run(&["list", "all", "--json"]));
    assert_eq!(listed["items"][0]["id"], request.id().as_str());
}

#[test]
fn a_bad_setting_is_a_usage_error_in_json_too() {
    let operator = Operator::new();
    let mut command = operator.command(&["config", "--json"]);
    command.env("APPROVAL_GATE_MAX_PENDING", "-1");
    let output = command.output().unwrap();
    assert_exit(&output, 2, "APPROVAL_GATE_MAX_PENDING");
    let body: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(body["error"]["code"], "usage", "{body}");
    assert_eq!(
        body["error"]["message"],
        "APPROVAL_GATE_MAX_PENDING: \"-1\" is not a whole number from 1 up"
    );
}

#[test]
fn completions_and_man_need_no_settings() {
    let operator = Operator::new();
    let pages = operator.path("pages");
    std::fs::create_dir(&pages).unwrap();
    let pages = text(&pages);
    for args in [
        vec!["completions", "bash"],
        vec!["man", "--out-dir", &pages],
    ] {
        let mut command = operator.command(&args);
        command.env("APPROVAL_GATE_DEFAULT_TTL", "never");
        assert_success(&command.output().unwrap());
    }
}
