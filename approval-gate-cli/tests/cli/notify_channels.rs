//! What the "done" names: a notifier with every kind of channel configured (a signed
//! webhook, Slack, ntfy, email and a command, each against a real local receiver) tells each
//! request once on each channel, with the link to its page, and a second run tells nothing.

use std::path::Path;

use approval_gate_tests::receiver::Receiver;

use crate::notify::{ORIGIN, by_key, notifier, verified, write_config};
use crate::support::Store;

#[path = "../../../examples/support/smtp_sink.rs"]
#[allow(dead_code)]
mod smtp_sink;

/// The messages the sink wrote, as text.
fn mails(outbox: &Path) -> Vec<String> {
    let mut mails: Vec<String> = std::fs::read_dir(outbox)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    mails.sort();
    mails
}

#[test]
fn every_channel_tells_each_request_once_with_its_page() {
    let store = Store::new();
    let scratch = store.scratch();
    let (webhook, slack, ntfy) = (
        Receiver::accepting(),
        Receiver::accepting(),
        Receiver::accepting(),
    );
    let sink = smtp_sink::SmtpSink::start(&scratch.join("outbox")).unwrap();
    let slack_url = scratch.join("slack-url");
    std::fs::write(&slack_url, format!("{}/services/T0/B0/x\n", slack.url())).unwrap();
    let told = scratch.join("told");
    let rest = format!(
        "[notify.channels.team]\ntype = \"slack\"\nurl = {{ file = \"{slack}\" }}\n\
         [notify.channels.phone]\ntype = \"ntfy\"\nserver = \"{ntfy}\"\ntopic = \"approvals\"\n\
         [notify.channels.mail]\ntype = \"email\"\nsmtp = \"smtp://{smtp}\"\n\
         from = \"gate@example.com\"\nto = [\"alice@example.com\"]\n\
         [notify.channels.script]\ntype = \"command\"\n\
         command = 'printf \"%s %s\\n\" \"$APPROVAL_GATE_KEY\" \"$APPROVAL_GATE_URL\" >> {told}'\n",
        slack = slack_url.display(),
        ntfy = ntfy.url(),
        smtp = sink.addr(),
        told = told.display(),
    );
    let config = write_config(scratch, &webhook.url(), &rest);
    let ids = [
        store.ask("deploy the site").id(),
        store.ask("wire 5 EUR").id(),
    ];
    let location = store.path.to_str().unwrap();

    let run = notifier(location, &config, &["--once"]).output().unwrap();
    let shown = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{shown}");

    let hooks = by_key(&webhook.wait_for(2));
    let slack_bodies = slack.wait_for(2);
    let ntfy_bodies = ntfy.wait_for(2);
    let mails = mails(sink.outbox());
    let lines = std::fs::read_to_string(&told).unwrap();
    assert_eq!(mails.len(), 2, "{mails:?}");
    assert_eq!(lines.lines().count(), 2, "{lines}");
    for id in ids {
        let page = format!("{ORIGIN}/requests/{id}");
        let hook = &hooks[&format!("{id}.ops.filed")];
        assert_eq!(hook.len(), 1);
        assert!(verified(&hook[0]));
        assert_eq!(hook[0].json()["data"]["url"], page);
        let one = |bodies: &[approval_gate_tests::receiver::Received]| {
            bodies
                .iter()
                .filter(|r| r.text().contains(&id.to_string()))
                .count()
        };
        assert_eq!(one(&slack_bodies), 1, "slack tells {id} once");
        assert!(slack_bodies.iter().any(|r| r.text().contains(&page)));
        assert_eq!(one(&ntfy_bodies), 1, "ntfy tells {id} once");
        assert!(ntfy_bodies.iter().any(|r| r.json()["click"] == page));
        let message_id = format!("<{id}.mail.filed@approval-gate.invalid>");
        assert_eq!(
            mails.iter().filter(|m| m.contains(&message_id)).count(),
            1,
            "one mail for {id}"
        );
        assert!(
            lines.contains(&format!("{id}.script.filed {page}")),
            "{lines}"
        );
    }

    // A second run finds every message delivered and sends nothing.
    let again = notifier(location, &config, &["--once"]).output().unwrap();
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(webhook.received().len(), 2);
    assert_eq!(slack.received().len(), 2);
    assert_eq!(ntfy.received().len(), 2);
    assert_eq!(std::fs::read_dir(sink.outbox()).unwrap().count(), 2);
    assert_eq!(std::fs::read_to_string(&told).unwrap().lines().count(), 2);
}
