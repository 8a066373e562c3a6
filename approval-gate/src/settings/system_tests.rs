//! The system policy: in force whatever the user's settings say, which may only add to it;
//! refused when the account reading it could change it, or when it is named and missing.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use super::tests::{KEY, World, flags, write};
use super::*;

/// A world with an approvers file and a system policy naming it, in a directory of their own.
fn with_system(quorum: &str) -> (World, PathBuf, PathBuf) {
    let mut world = World::new();
    let etc = world.home.join("etc");
    std::fs::create_dir(&etc).unwrap();
    std::fs::set_permissions(&etc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let signers = etc.join("allowed_signers");
    write(&signers, &format!("alice@example.com {KEY}\n"));
    let system = etc.join("policy.toml");
    write(
        &system,
        &format!("approvers = {:?}\n{quorum}", signers.to_str().unwrap()),
    );
    world.set(SYSTEM_POLICY_ENV, &system);
    (world, system, signers)
}

/// Whether this run can make a system policy the reading account could not change: only root
/// can (its files are root's); any other account owns what it writes, which the policy
/// rightly refuses. Says so when it cannot.
fn as_root() -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root {
        eprintln!("skipped: only root can write a system policy this account could not change");
    }
    root
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_system_policy_holds_whatever_the_users_settings_say() {
    if !as_root() {
        return;
    }
    let (mut world, system, signers) = with_system("[quorum]\n\"payments.*\" = 2\n\"*\" = 1\n");
    // Nothing in the user's settings: the system's approvers and quorum.
    let settings = world.settings(&flags());
    assert_eq!(
        settings.approvers,
        Setting::new(Some(signers.clone()), Source::System(system.clone()))
    );
    let policy = settings.policy.as_ref().unwrap();
    assert_eq!(policy.required_approvals(Some("payments.wire")), 2);
    assert_eq!(settings.system_policy.as_ref().unwrap().path, system);

    // A user's quorum can raise a number, never lower one.
    for (quorum, payments, deploy) in [("payments.*=1,*=1", 2, 1), ("deploy.*=3,*=1", 2, 3)] {
        let settings = world.settings(&Flags {
            quorum: Some(quorum.into()),
            ..flags()
        });
        let policy = settings.policy.as_ref().unwrap();
        assert_eq!(policy.required_approvals(Some("payments.wire")), payments);
        assert_eq!(policy.required_approvals(Some("deploy.web")), deploy);
    }

    // A user's approvers file cannot replace the system's, from a flag, a variable or a file;
    // naming the same file is no change.
    let own = world.home.join("own_signers");
    write(&own, &format!("mallory@example.com {KEY}\n"));
    let error = world.error(&Flags {
        approvers: Some(own.clone()),
        ..flags()
    });
    assert!(error.contains("cannot replace"), "{error}");
    assert!(error.contains("(flag --approvers)"), "{error}");
    world.write_config(&format!("approvers = {:?}\n", own.to_str().unwrap()));
    assert!(world.error(&flags()).contains("cannot replace"));
    world.write_config(&format!("approvers = {:?}\n", signers.to_str().unwrap()));
    assert!(world.settings(&flags()).policy.is_some());
    world.write_config("");
    world.set(APPROVERS_ENV, &own);
    assert!(world.error(&flags()).contains("cannot replace"));
}

#[test]
fn a_named_system_policy_must_exist_and_be_well_formed() {
    if !as_root() {
        return;
    }
    let (mut world, system, _) = with_system("");
    let missing = system.with_file_name("missing.toml");
    world.set(SYSTEM_POLICY_ENV, &missing);
    let error = world.error(&flags());
    assert!(
        error.starts_with(&format!("system policy {}", missing.display())),
        "{error}"
    );
    world.set(SYSTEM_POLICY_ENV, "");
    assert!(world.error(&flags()).contains("is empty"));
    world.set(SYSTEM_POLICY_ENV, &system);
    for (text, needle) in [
        ("", "names no `approvers`"),
        ("approvers = \"signers\"\n", "is relative"),
        ("store = \"/x\"\n", "unknown key \"store\""),
        (
            "approvers = \"/nonexistent/signers\"\n",
            "approvers file /nonexistent/signers",
        ),
    ] {
        write(&system, text);
        let error = world.error(&flags());
        assert!(error.contains(needle), "{text:?}: {error}");
    }
    let (world, _, _) = with_system("[quorum]\n\"payments.*\" = 2\n");
    let error = world.error(&flags());
    assert!(error.contains("but not `*`"), "{error}");
    assert!(error.starts_with("system policy "), "{error}");
}

#[test]
fn a_system_policy_others_can_change_is_refused() {
    if !as_root() {
        return;
    }
    let (world, system, signers) = with_system("");
    chmod(&system, 0o664);
    let error = world.error(&flags());
    assert!(
        error.contains("it is writable by group or others (mode 664)"),
        "{error}"
    );
    chmod(&system, 0o644);
    let etc = system.parent().unwrap();
    chmod(etc, 0o777);
    let error = world.error(&flags());
    assert!(error.contains("its directory"), "{error}");
    // A sticky directory is fine: no one may replace another's entry in it.
    chmod(etc, 0o1777);
    assert!(world.settings(&flags()).policy.is_some());
    chmod(etc, 0o755);
    chmod(&signers, 0o666);
    let error = world.error(&flags());
    assert!(error.contains("approvers file"), "{error}");
    assert!(error.contains("writable by group or others"), "{error}");
}

#[test]
fn without_a_system_policy_the_users_settings_decide() {
    if Path::new(SYSTEM_POLICY_PATH).exists() {
        eprintln!("skipped: this machine has {SYSTEM_POLICY_PATH}, which every run obeys");
        return;
    }
    let world = World::new();
    let settings = world.settings(&flags());
    assert_eq!(settings.system_policy, None);
    assert!(settings.policy.is_none());
}
