use std::collections::HashMap;
use std::path::Path;

use super::*;

/// An environment of its own, and a home with a config file in the default place.
pub(super) struct World {
    _tmp: tempfile::TempDir,
    pub(super) home: PathBuf,
    pub(super) env: HashMap<String, OsString>,
}

impl World {
    pub(super) fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let env = HashMap::from([("HOME".to_owned(), OsString::from(&home))]);
        Self {
            _tmp: tmp,
            home,
            env,
        }
    }

    pub(super) fn default_config(&self) -> PathBuf {
        self.home.join(".config/approval-gate/config.toml")
    }

    pub(super) fn write_config(&self, text: &str) -> PathBuf {
        let path = self.default_config();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        write(&path, text);
        path
    }

    pub(super) fn set(&mut self, name: &str, value: impl Into<OsString>) -> &mut Self {
        self.env.insert(name.to_owned(), value.into());
        self
    }

    pub(super) fn resolve(&self, flags: &Flags) -> Result<Settings, SettingsError> {
        Settings::resolve_with(flags, &|name| self.env.get(name).cloned())
    }

    pub(super) fn settings(&self, flags: &Flags) -> Settings {
        self.resolve(flags).unwrap()
    }

    pub(super) fn error(&self, flags: &Flags) -> String {
        self.resolve(flags).unwrap_err().to_string()
    }
}

/// Writes a config file only its owner can write, whatever the umask.
pub(super) fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

pub(super) fn flags() -> Flags {
    Flags::default()
}

fn dir(path: &str) -> Location {
    Location::Dir(PathBuf::from(path))
}

#[test]
fn nothing_set_gives_the_defaults() {
    let world = World::new();
    let settings = world.settings(&flags());
    assert_eq!(
        settings.store,
        Setting::new(
            Location::Dir(world.home.join(".approval-gate")),
            Source::Default
        )
    );
    assert_eq!(settings.limits(), Limits::default());
    for source in [
        &settings.max_pending.source,
        &settings.max_requests.source,
        &settings.default_ttl.source,
    ] {
        assert_eq!(source, &Source::Default);
    }
    assert_eq!(
        settings.config,
        ConfigFile {
            path: Some(world.default_config()),
            source: Source::Default,
            found: false,
        }
    );
}

#[test]
fn the_store_comes_from_flag_then_env_then_file_then_default() {
    let mut world = World::new();
    let file = world.write_config("store = \"file:///from/file\"\n");
    let file = Source::File(file);
    assert_eq!(
        world.settings(&flags()).store,
        Setting::new(dir("/from/file"), file)
    );

    world.set(DIR_ENV, "/from/dir-env");
    assert_eq!(
        world.settings(&flags()).store,
        Setting::new(dir("/from/dir-env"), Source::Env(DIR_ENV))
    );
    world.set(STORE_ENV, "file:///from/store-env");
    assert_eq!(
        world.settings(&flags()).store,
        Setting::new(dir("/from/store-env"), Source::Env(STORE_ENV))
    );
    let with_dir = Flags {
        dir: Some("/from/dir-flag".into()),
        ..flags()
    };
    assert_eq!(
        world.settings(&with_dir).store,
        Setting::new(dir("/from/dir-flag"), Source::Flag("--dir"))
    );
    let with_store = Flags {
        store: Some("file://localhost/from/store-flag".into()),
        ..flags()
    };
    assert_eq!(
        world.settings(&with_store).store,
        Setting::new(dir("/from/store-flag"), Source::Flag("--store"))
    );
}

#[test]
fn each_limit_comes_from_env_then_file_then_default() {
    let mut world = World::new();
    let path = world.write_config("max_pending = 5\nmax_requests = 50\ndefault_ttl = \"2h 30m\"\n");
    let settings = world.settings(&flags());
    assert_eq!(
        settings.max_pending,
        Setting::new(5, Source::File(path.clone()))
    );
    assert_eq!(
        settings.max_requests,
        Setting::new(50, Source::File(path.clone()))
    );
    assert_eq!(
        settings.default_ttl,
        Setting::new(Duration::from_secs(9000), Source::File(path.clone()))
    );
    assert!(settings.config.found);
    assert_eq!(
        settings.limits(),
        Limits::default()
            .max_pending(5)
            .max_requests(50)
            .default_ttl(Duration::from_secs(9000))
    );

    world
        .set(MAX_PENDING_ENV, "7")
        .set(MAX_REQUESTS_ENV, "70")
        .set(DEFAULT_TTL_ENV, "10m");
    let settings = world.settings(&flags());
    assert_eq!(
        settings.max_pending,
        Setting::new(7, Source::Env(MAX_PENDING_ENV))
    );
    assert_eq!(
        settings.max_requests,
        Setting::new(70, Source::Env(MAX_REQUESTS_ENV))
    );
    assert_eq!(
        settings.default_ttl,
        Setting::new(Duration::from_secs(600), Source::Env(DEFAULT_TTL_ENV))
    );
}

#[test]
fn an_empty_variable_is_refused_where_it_would_be_used() {
    for (name, needle) in [
        (STORE_ENV, "APPROVAL_GATE_STORE: is empty"),
        (DIR_ENV, EMPTY_DIR),
        (
            MAX_PENDING_ENV,
            "APPROVAL_GATE_MAX_PENDING: is empty: give a whole number",
        ),
        (MAX_REQUESTS_ENV, "APPROVAL_GATE_MAX_REQUESTS: is empty"),
        (
            DEFAULT_TTL_ENV,
            "APPROVAL_GATE_DEFAULT_TTL: is empty: give a duration",
        ),
        (CONFIG_ENV, "APPROVAL_GATE_CONFIG: is empty"),
    ] {
        let mut world = World::new();
        world.set(name, "");
        let error = world.error(&flags());
        assert!(error.starts_with(needle), "{error}");
    }
    // A flag above it wins, as an explicit --dir wins over APPROVAL_GATE_DIR=.
    let mut world = World::new();
    world
        .set(STORE_ENV, "")
        .set(DIR_ENV, "")
        .set(CONFIG_ENV, "");
    let named = world.home.join("named.toml");
    write(&named, "");
    let settings = world.settings(&Flags {
        dir: Some("/explicit".into()),
        config: Some(named),
        ..flags()
    });
    assert_eq!(settings.store.value, dir("/explicit"));
    // An empty HOME or XDG_CONFIG_HOME is unset, as the XDG spec says.
    let mut world = World::new();
    world.set("XDG_CONFIG_HOME", "").set(DIR_ENV, "/d");
    assert_eq!(
        world.settings(&flags()).config.path,
        Some(world.default_config())
    );
    world.set("HOME", "");
    assert_eq!(world.settings(&flags()).config.path, None);
}

#[test]
fn the_config_file_comes_from_flag_then_env_then_xdg_then_home() {
    let mut world = World::new();
    let xdg = world.home.join("xdg");
    world.set("XDG_CONFIG_HOME", &xdg);
    assert_eq!(
        world.settings(&flags()).config.path,
        Some(xdg.join("approval-gate/config.toml"))
    );
    // The XDG spec says a relative XDG_CONFIG_HOME is to be ignored.
    world.set("XDG_CONFIG_HOME", "relative");
    assert_eq!(
        world.settings(&flags()).config.path,
        Some(world.default_config())
    );

    let env_file = world.home.join("env.toml");
    write(&env_file, "max_pending = 3\n");
    world.set(CONFIG_ENV, &env_file);
    let settings = world.settings(&flags());
    assert_eq!(settings.config.source, Source::Env(CONFIG_ENV));
    assert_eq!(settings.max_pending.value, 3);

    let flag_file = world.home.join("flag.toml");
    write(&flag_file, "max_pending = 4\n");
    let settings = world.settings(&Flags {
        config: Some(flag_file.clone()),
        ..flags()
    });
    assert_eq!(settings.config.source, Source::Flag("--config"));
    assert_eq!(
        settings.max_pending,
        Setting::new(4, Source::File(flag_file))
    );
}

#[test]
fn a_named_config_file_must_exist() {
    let mut world = World::new();
    let missing = world.home.join("missing.toml");
    world.set(CONFIG_ENV, &missing);
    let error = world.error(&flags());
    assert!(error.contains("missing.toml"), "{error}");
    assert!(error.contains(CONFIG_ENV), "{error}");
}

#[test]
fn bad_files_name_the_file_and_the_key() {
    let world = World::new();
    for (text, needle) in [
        ("max_pendng = 5\n", "unknown key \"max_pendng\""),
        ("[limits]\nmax_pending = 5\n", "unknown key \"limits\""),
        (
            "max_pending = 0\n",
            "max_pending: 0 is not a whole number from 1 up",
        ),
        ("max_requests = -1\n", "max_requests: -1 is not"),
        (
            "max_pending = \"5\"\n",
            "max_pending: expected a whole number, got string",
        ),
        (
            "max_requests = 1.5\n",
            "max_requests: expected a whole number, got float",
        ),
        (
            "default_ttl = 600\n",
            "default_ttl: expected a duration in a string",
        ),
        (
            "default_ttl = \"5s\"\n",
            "default_ttl: \"5s\" is outside 10s to 7days",
        ),
        ("default_ttl = \"8days\"\n", "is outside"),
        (
            "default_ttl = \"10s 500ms\"\n",
            "not a whole number of seconds",
        ),
        (
            "default_ttl = \"soon\"\n",
            "default_ttl: \"soon\" is not a duration",
        ),
        (
            "store = \"relative/dir\"\n",
            "store: \"relative/dir\" is relative",
        ),
        ("store = \"mysql://db/x\"\n", "store: the scheme \"mysql\""),
        (
            "store = 5\n",
            "store: expected a path or file: URL in a string",
        ),
        ("\n\nmax_pending = [\n", "line 3: "),
    ] {
        let path = world.write_config(text);
        let error = world.error(&flags());
        let file = format!("config file {}: ", path.display());
        assert!(error.starts_with(&file), "{text:?}: {error}");
        assert!(error.contains(needle), "{text:?}: {error}");
    }
}

#[test]
fn the_signer_is_an_absolute_path_never_one_found_through_path() {
    let mut world = World::new();
    assert_eq!(
        world.settings(&flags()).signer().program(),
        Path::new("/usr/bin/ssh-keygen")
    );
    world.write_config("ssh_keygen = \"/opt/openssh/bin/ssh-keygen\"\n");
    assert_eq!(
        world.settings(&flags()).signer().program(),
        Path::new("/opt/openssh/bin/ssh-keygen")
    );
    world.set(SSH_KEYGEN_ENV, "/usr/local/bin/ssh-keygen");
    let settings = world.settings(&flags());
    assert_eq!(settings.ssh_keygen.source, Source::Env(SSH_KEYGEN_ENV));
    assert_eq!(
        settings.signer().program(),
        Path::new("/usr/local/bin/ssh-keygen")
    );
    for relative in ["ssh-keygen", "bin/ssh-keygen"] {
        world.set(SSH_KEYGEN_ENV, relative);
        let error = world.error(&flags());
        assert!(error.contains("never looked up through PATH"), "{error}");
    }
    world.set(SSH_KEYGEN_ENV, "");
    assert!(world.error(&flags()).contains(SSH_KEYGEN_ENV));
    world.env.remove(SSH_KEYGEN_ENV);
    world.write_config("ssh_keygen = \"ssh-keygen\"\n");
    assert!(world.error(&flags()).contains("is relative"));
}

pub(super) const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnZwmXVt3qbW0f6C3lbYqQ7Y1E9ifmZhhiCphQ2YUlz";

#[test]
fn the_policy_comes_from_approvers_and_quorum_each_whole() {
    let mut world = World::new();
    let signers = world.home.join("allowed_signers");
    write(&signers, &format!("alice@example.com {KEY}\n"));
    let path = world.write_config(&format!(
        "approvers = {:?}\nsigning_key = \"/keys/id\"\n[quorum]\n\"payments.*\" = 2\n\"deploy.*\" = 3\n\"*\" = 1\n",
        signers.display().to_string()
    ));
    let settings = world.settings(&flags());
    assert_eq!(settings.approvers.source, Source::File(path.clone()));
    assert_eq!(settings.signing_key.value, Some(PathBuf::from("/keys/id")));
    let policy = settings.policy.as_ref().unwrap();
    assert_eq!(policy.required_approvals(Some("payments.wire")), 2);
    assert_eq!(policy.required_approvals(Some("deploy.web")), 3);
    assert_eq!(policy.required_approvals(Some("mail.send")), 1);

    // The variable replaces the file's table; it does not add to it.
    world.set(QUORUM_ENV, "deploy.*=4,*=1");
    let settings = world.settings(&flags());
    assert_eq!(
        settings.quorum.value,
        [("deploy.*".to_owned(), 4), ("*".to_owned(), 1)]
    );
    let policy = settings.policy.as_ref().unwrap();
    assert_eq!(policy.required_approvals(Some("payments.wire")), 1);
    assert_eq!(policy.required_approvals(Some("deploy.web")), 4);
    let settings = world.settings(&Flags {
        quorum: Some("payments.*=5,*=2".into()),
        ..flags()
    });
    assert_eq!(settings.quorum.source, Source::Flag("--quorum"));
    world.set(SIGNING_KEY_ENV, "/other/key");
    assert_eq!(
        world.settings(&flags()).signing_key,
        Setting::new(
            Some(PathBuf::from("/other/key")),
            Source::Env(SIGNING_KEY_ENV)
        )
    );
}

#[test]
fn bad_approvers_and_quorums_are_refused() {
    let world = World::new();
    for (text, needle) in [
        (
            "[quorum]\n\"p.*\" = 0\n",
            "quorum: p.*: \"0\" is not a number of approvers",
        ),
        ("[quorum]\n\"p.*\" = 17\n", "from 1 to 16"),
        ("[quorum]\n\"p.*\" = \"2\"\n", "expected a whole number"),
        ("quorum = 2\n", "quorum: expected a table"),
        (
            "approvers = \"signers\"\n",
            "approvers: \"signers\" is relative",
        ),
        ("[quorum]\n\"p.*\" = 2\n", "needs trusted approvers"),
        (
            "approvers = \"/nonexistent/signers\"\n",
            "approvers file /nonexistent/signers",
        ),
    ] {
        world.write_config(text);
        let error = world.error(&flags());
        assert!(error.contains(needle), "{text:?}: {error}");
    }
    let mut world = World::new();
    let signers = world.home.join("allowed_signers");
    write(&signers, "# nobody\n");
    world.set(APPROVERS_ENV, &signers);
    let error = world.error(&flags());
    assert!(error.contains("no trusted key"), "{error}");
    assert!(error.contains("(env APPROVAL_GATE_APPROVERS)"), "{error}");
    write(&signers, &format!("alice@example.com {KEY}\n"));
    for (quorum, needle) in [
        // Issue 22, finding 13: the table must say what the rest needs.
        ("p.*=2", "names p.* but not `*`"),
        ("P.*=2,*=1", "which no operation name has"),
        ("p.*", "is not PATTERN=N"),
        ("=2", "an empty operation pattern"),
        ("p.*=two", "\"two\" is not a number"),
        ("", "is empty"),
    ] {
        world.set(QUORUM_ENV, quorum);
        let error = world.error(&flags());
        assert!(error.contains(QUORUM_ENV), "{error}");
        assert!(error.contains(needle), "{quorum:?}: {error}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        world.env.remove(QUORUM_ENV);
        std::fs::set_permissions(&signers, std::fs::Permissions::from_mode(0o666)).unwrap();
        let error = world.error(&flags());
        assert!(error.contains("is writable by others"), "{error}");
    }
}

#[test]
fn a_bad_file_fails_even_when_overridden() {
    let mut world = World::new();
    world.write_config("max_pending = 0\n");
    world.set(MAX_PENDING_ENV, "5");
    assert!(world.error(&flags()).contains("max_pending"));
}

#[test]
fn bad_variables_name_the_variable() {
    for (name, value, needle) in [
        (
            MAX_PENDING_ENV,
            "many",
            "\"many\" is not a whole number from 1 up",
        ),
        (MAX_PENDING_ENV, "0", "\"0\" is not a whole number"),
        (MAX_REQUESTS_ENV, "-3", "\"-3\" is not a whole number"),
        (DEFAULT_TTL_ENV, "1 fortnight", "is not a duration"),
        (DEFAULT_TTL_ENV, "9s", "is outside 10s to 7days"),
        (STORE_ENV, "mysql://db/x", "the scheme \"mysql\""),
        (STORE_ENV, "file://elsewhere/x", "names the host"),
    ] {
        let mut world = World::new();
        world.set(name, value);
        let error = world.error(&flags());
        assert!(error.starts_with(&format!("{name}: ")), "{error}");
        assert!(error.contains(needle), "{error}");
    }
    // Checked even when a flag overrides it.
    let mut world = World::new();
    world.set(STORE_ENV, "mysql://db/x");
    let error = world.error(&Flags {
        dir: Some("/x".into()),
        ..flags()
    });
    assert!(error.starts_with(STORE_ENV), "{error}");
}

#[test]
fn bad_flags_name_the_flag() {
    let world = World::new();
    for (flags, needle) in [
        (
            Flags {
                store: Some("ftp://x".into()),
                ..flags()
            },
            "--store: the scheme \"ftp\"",
        ),
        (
            Flags {
                store: Some(String::new()),
                ..flags()
            },
            "--store: is empty",
        ),
        (
            Flags {
                dir: Some(PathBuf::new()),
                ..flags()
            },
            EMPTY_DIR,
        ),
        (
            Flags {
                config: Some(PathBuf::new()),
                ..flags()
            },
            "--config: is empty",
        ),
    ] {
        let error = world.error(&flags);
        assert!(error.starts_with(needle), "{error}");
    }
}

#[test]
fn without_a_home_the_store_must_be_named() {
    let mut world = World::new();
    world.env.remove("HOME");
    let error = world.error(&flags());
    assert!(error.contains("HOME is not set"), "{error}");
    world.set(DIR_ENV, "/somewhere");
    let settings = world.settings(&flags());
    assert_eq!(settings.config.path, None);
    assert!(!settings.config.found);
}

#[cfg(unix)]
#[test]
fn a_config_file_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;

    let world = World::new();
    let path = world.write_config("max_pending = 5\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
    let error = world.error(&flags());
    assert!(
        error.contains("is writable by others (mode 664)"),
        "{error}"
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(world.settings(&flags()).max_pending.value, 5);
}

#[test]
fn resolving_creates_nothing() {
    let world = World::new();
    world.write_config("max_pending = 5\n");
    let settings = world.settings(&flags());
    let Location::Dir(store) = &settings.store.value else {
        panic!("a directory store");
    };
    assert!(!store.exists());
}

#[test]
fn the_settings_open_a_gate_with_their_limits() {
    let world = World::new();
    let store = world.home.join("store");
    world.write_config(&format!(
        "store = {:?}\nmax_pending = 1\ndefault_ttl = \"15m\"\n",
        store.display().to_string()
    ));
    let gate = world.settings(&flags()).open().unwrap();
    assert_eq!(gate.location(), &Location::Dir(store));
    assert_eq!(gate.limits().max_pending, 1);
    let ask = || crate::NewRequest::new("one", "the test needs it");
    let filed = gate.request_approval(ask()).unwrap().request;
    let ttl = filed.created_at().millis_until(filed.expires_at());
    assert_eq!(ttl, 15 * 60 * 1000);
    let second = gate.request_approval(crate::NewRequest::new("two", "again"));
    assert!(
        matches!(second, Err(crate::Error::QueueFull { limit: 1, .. })),
        "{second:?}"
    );
}

#[test]
fn what_each_layer_refuses_and_in_which_order() {
    // An empty APPROVAL_GATE_QUORUM is refused even under --quorum; an empty
    // APPROVAL_GATE_APPROVERS is not, as an empty variable is refused only where used.
    let mut world = World::new();
    let signers = world.home.join("allowed_signers");
    write(&signers, &format!("alice@example.com {KEY}\n"));
    world.set(QUORUM_ENV, "").set(APPROVERS_ENV, "");
    let policy = Flags {
        approvers: Some(signers),
        quorum: Some("*=1".into()),
        ..flags()
    };
    let error = world.error(&policy);
    assert!(
        error.starts_with("APPROVAL_GATE_QUORUM: is empty: give a list"),
        "{error}"
    );
    world.env.remove(QUORUM_ENV);
    assert_eq!(
        world.settings(&policy).quorum.source,
        Source::Flag("--quorum")
    );
    // A wrong variable under a wrong flag: the variable's mistake is the one reported.
    world.set(STORE_ENV, "mysql://db/x");
    let error = world.error(&Flags {
        store: Some("ftp://x".into()),
        ..flags()
    });
    assert!(
        error.starts_with("APPROVAL_GATE_STORE: the scheme"),
        "{error}"
    );
    // A wrong file before any wrong variable, and its keys in the file's (sorted) order.
    world.write_config("store = 5\nmax_pending = 0\n");
    let error = world.error(&flags());
    assert!(error.contains(": max_pending: 0 is not"), "{error}");
    // Empty flags, each with its own words.
    let world = World::new();
    for (flags, needle) in [
        (
            Flags {
                approvers: Some(PathBuf::new()),
                ..flags()
            },
            "--approvers: is empty: give a file",
        ),
        (
            Flags {
                quorum: Some(String::new()),
                ..flags()
            },
            "--quorum: \"\" is not PATTERN=N",
        ),
    ] {
        let error = world.error(&flags);
        assert!(error.starts_with(needle), "{error}");
    }
}

#[cfg(unix)]
#[test]
fn a_variable_read_as_text_must_be_utf8_and_a_path_need_not() {
    use std::os::unix::ffi::OsStringExt as _;

    let latin1 = || OsString::from_vec(b"/caf\xe9".to_vec());
    for name in [STORE_ENV, MAX_PENDING_ENV, DEFAULT_TTL_ENV, QUORUM_ENV] {
        let mut world = World::new();
        world.set(name, latin1());
        assert_eq!(world.error(&flags()), format!("{name}: is not UTF-8"));
    }
    let mut world = World::new();
    world.set(DIR_ENV, latin1()).set(SIGNING_KEY_ENV, latin1());
    let settings = world.settings(&flags());
    assert_eq!(settings.store.value, Location::Dir(latin1().into()));
    assert_eq!(settings.signing_key.value, Some(latin1().into()));
}

#[test]
fn the_public_url_comes_from_env_then_file_then_none() {
    let mut world = World::new();
    assert_eq!(world.settings(&flags()).public_url.value, None);
    let path = world.write_config(
        "public_url = \"https://approvals.example.com\"\n[notify.channels.ops]\ntype = \"webhook\"\n",
    );
    let settings = world.settings(&flags());
    assert_eq!(
        settings.public_url,
        Setting::new(
            Some("https://approvals.example.com".to_owned()),
            Source::File(path)
        )
    );
    world.set(PUBLIC_URL_ENV, "http://localhost:8470");
    assert_eq!(
        world.settings(&flags()).public_url,
        Setting::new(
            Some("http://localhost:8470".to_owned()),
            Source::Env(PUBLIC_URL_ENV)
        )
    );
    world.set(PUBLIC_URL_ENV, "");
    let error = world.error(&flags());
    assert!(
        error.contains("APPROVAL_GATE_PUBLIC_URL: is empty"),
        "{error}"
    );
    world.set(PUBLIC_URL_ENV, "approvals.example.com");
    let error = world.error(&flags());
    assert!(
        error.contains("APPROVAL_GATE_PUBLIC_URL: \"approvals.example.com\" is not an origin"),
        "{error}"
    );
}

#[test]
fn a_bad_public_url_or_notify_key_in_the_file_is_refused_by_name() {
    let world = World::new();
    for (text, needle) in [
        (
            "public_url = 5\n",
            "public_url: expected an origin in a string",
        ),
        (
            "public_url = \"ftp://x\"\n",
            "public_url: \"ftp://x\" is not an origin",
        ),
        ("notify = \"webhook\"\n", "notify: expected a table"),
    ] {
        world.write_config(text);
        let error = world.error(&flags());
        assert!(error.contains(needle), "{text:?}: {error}");
    }
}
