use serde_json::json;

use super::*;

fn rules(text: &str) -> Result<HookRules, String> {
    let table: toml::Table = text.parse().unwrap();
    (HOOKS.file)(&table["hooks"])
}

#[test]
fn tools_and_bash_commands_match_as_globs() {
    let rules =
        rules("[hooks]\ntools = [\"mcp__*__send*\"]\ncommands = [\"git push*\", \"rm -rf*\"]\n")
            .unwrap();
    let none = json!({});
    assert_eq!(
        rules.matching("mcp__slack__send_message", &none),
        Some("mcp__*__send*")
    );
    assert_eq!(rules.matching("mcp__slack__read", &none), None);
    let push = json!({"command": "git push origin main", "description": "push"});
    assert_eq!(rules.matching("Bash", &push), Some("git push*"));
    assert_eq!(
        rules.matching("Bash", &json!({"command": "rm -rf /"})),
        Some("rm -rf*")
    );
    // Command patterns are for Bash only, and a Bash call without a command string matches
    // none of them.
    assert_eq!(rules.matching("Write", &push), None);
    assert_eq!(rules.matching("Bash", &json!({"command": 7})), None);
    assert_eq!(
        rules.matching("Bash", &json!({"command": "git status"})),
        None
    );
    assert_eq!(rules.timeout, DEFAULT_HOOK_TIMEOUT);
}

#[test]
fn a_wrong_table_is_refused_with_what_to_write() {
    let refused = [
        ("[hooks]\ntool = []\n", "unknown key \"tool\""),
        ("[hooks]\ntools = \"Bash\"\n", "expected a list"),
        ("[hooks]\ncommands = [\"\"]\n", "empty pattern"),
        ("[hooks]\ncommands = [1]\n", "expected a pattern"),
        ("[hooks]\ntimeout = 5\n", "expected a duration"),
        ("[hooks]\ntimeout = \"0s\"\n", "outside 1s to 24h"),
        ("hooks = 1\n", "expected a table"),
    ];
    for (text, problem) in refused {
        let error = rules(text).unwrap_err();
        assert!(error.contains(problem), "{text}: {error}");
    }
    assert_eq!(
        rules("[hooks]\ntimeout = \"2m\"\n").unwrap().timeout,
        Duration::from_secs(120)
    );
}
