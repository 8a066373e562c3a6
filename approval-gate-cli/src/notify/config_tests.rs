use super::*;

fn table(text: &str) -> toml::Table {
    let file: toml::Table = text.parse().unwrap();
    file["notify"].as_table().unwrap().clone()
}

fn error(text: &str) -> String {
    Config::from_table(&table(text)).unwrap_err()
}

#[test]
fn mistakes_are_refused_naming_the_key() {
    for (text, needle) in [
        (
            "[notify]\nreminder = \"5m\"\n",
            "notify.reminder: unknown key",
        ),
        ("[notify]\n", "notify.channels: no channel"),
        ("[notify.channels]\n", "notify.channels: no channel"),
        (
            "[notify.channels.Ops]\ntype = \"webhook\"\n",
            "notify.channels.Ops: \"Ops\" is not a channel name",
        ),
        (
            "[notify.channels.ops]\nurl = \"x\"\n",
            "notify.channels.ops.type: missing",
        ),
        (
            "[notify.channels.ops]\ntype = \"pager\"\n",
            "notify.channels.ops.type: unknown channel type \"pager\"",
        ),
        (
            "[notify.channels.ops]\ntype = \"slack\"\n",
            "notify.channels.ops.url: missing",
        ),
        (
            "[notify.channels.ops]\ntype = \"webhook\"\noperations = [\"Pay*\"]\n",
            "notify.channels.ops.operations: operation pattern \"Pay*\"",
        ),
        (
            "[notify.channels.ops]\ntype = \"webhook\"\non_call = \"yes\"\n",
            "notify.channels.ops.on_call: must be true or false",
        ),
        (
            "[notify]\nreminder_before = \"0s\"\n[notify.channels.ops]\ntype = \"pager\"\n",
            "notify.reminder_before: \"0s\" must be more than 0",
        ),
        (
            "[notify]\nreminder_before = 5\n",
            "notify.reminder_before: must be a duration",
        ),
    ] {
        let error = error(text);
        assert!(error.contains(needle), "{text:?}: {error}");
    }
}

#[test]
fn a_channel_name_is_short_lowercase_letters_digits_dashes_and_underscores() {
    assert!(check_name("ops").is_ok());
    assert!(check_name("on-call_2").is_ok());
    assert!(check_name(&"a".repeat(32)).is_ok());
    for bad in ["", "Ops", "a.b", "a b", "é", &"a".repeat(33)] {
        assert!(check_name(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn patterns_and_delays_are_read_and_checked() {
    let value = |text: &str| -> toml::Value { text.parse::<toml::Table>().unwrap()["v"].clone() };
    assert_eq!(
        patterns(&value("v = \"payments.*\"")).unwrap(),
        ["payments.*"]
    );
    assert_eq!(
        patterns(&value("v = [\"a.*\", \"b\"]")).unwrap(),
        ["a.*", "b"]
    );
    assert!(patterns(&value("v = []")).is_err());
    assert!(patterns(&value("v = [1]")).is_err());
    assert_eq!(
        delay(&value("v = \"15m\"")).unwrap(),
        Duration::from_secs(900)
    );
    assert!(delay(&value("v = \"32days\"")).is_err());
    assert!(delay(&value("v = \"soon\"")).is_err());
}

/// A config with webhook channels `ops` and `oncall` (on call), a key file in `dir`.
fn with_channels(dir: &std::path::Path, rest: &str) -> String {
    let key = dir.join("key");
    std::fs::write(&key, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    format!(
        "[notify]\nreminder_before = \"10m\"\n\
         [notify.channels.ops]\ntype = \"webhook\"\nurl = \"https://h.example/a\"\n\
         secret = {{ file = {key:?} }}\noperations = [\"payments.*\", \"deploy\"]\n\
         [notify.channels.oncall]\ntype = \"webhook\"\nurl = \"https://h.example/b\"\n\
         secret = {{ file = {key:?} }}\non_call = true\n{rest}"
    )
}

#[test]
fn channels_reminders_and_escalations_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let text = with_channels(
        dir.path(),
        "[[notify.escalate]]\noperations = \"payments.*\"\nafter = \"15m\"\nchannels = [\"oncall\"]\n",
    );
    let config = Config::from_table(&table(&text)).unwrap();
    assert_eq!(config.reminder_before, Some(Duration::from_secs(600)));
    let names: Vec<&str> = config.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["oncall", "ops"]);
    let ops = &config.channels[1];
    assert!(ops.hears(Some("payments.refund")));
    assert!(ops.hears(Some("deploy")));
    assert!(!ops.hears(Some("deploy.prod")));
    assert!(!ops.hears(None));
    let oncall = &config.channels[0];
    assert!(
        !oncall.hears(Some("payments.refund")),
        "on call: escalations only"
    );
    assert_eq!(
        config.escalations,
        [Escalation {
            operations: vec!["payments.*".into()],
            after: Duration::from_secs(900),
            channels: vec!["oncall".into()],
        }]
    );
    assert!(config.escalations[0].covers(Some("payments.x")));
    assert!(!config.escalations[0].covers(None));
}

#[test]
fn an_escalation_must_name_known_channels_and_a_delay() {
    let dir = tempfile::tempdir().unwrap();
    for (rule, needle) in [
        (
            "after = \"1m\"\nchannels = [\"pager\"]\n",
            "notify.escalate[0].channels: no channel is named \"pager\"",
        ),
        (
            "channels = [\"oncall\"]\n",
            "notify.escalate[0].after: missing",
        ),
        (
            "after = \"1m\"\nchannels = []\n",
            "notify.escalate[0].channels: must be a list",
        ),
        (
            "after = \"1m\"\nchannels = [\"oncall\"]\nwhen = 1\n",
            "notify.escalate[0].when: unknown key",
        ),
    ] {
        let text = with_channels(dir.path(), &format!("[[notify.escalate]]\n{rule}"));
        let error = error(&text);
        assert!(error.contains(needle), "{rule:?}: {error}");
    }
}
