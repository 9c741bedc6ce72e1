//! Every answer a receiver can give, sent by a real server on loopback and
//! classified by the webhook adapter, against the table in
//! `docs/webhooks.md` ("Answers"): the page integrators read and the code
//! cannot disagree (they once did about 409).

use std::collections::BTreeMap;

use nomos_continue::agent::{Agent, AgentError, WebhookAgent, WebhookConfig};
use nomos_continue_tests::http::{RecordingServer, Reply, Script};

use super::continuation;

/// What the table calls each class, and how an outcome is named alike.
fn class(outcome: &Result<(), AgentError>) -> &'static str {
    match outcome {
        Ok(()) => "delivered",
        Err(AgentError::Unavailable { .. }) => "unavailable",
        Err(AgentError::Retryable(_)) => "retryable",
        Err(AgentError::Permanent(_)) => "failed",
        Err(other) => panic!("a class the table does not name: {other}"),
    }
}

/// The class of every status from 200 to 599 by the page's table: a row's
/// `Nxx` names the default of its hundred, a three-digit code overrides
/// it. Panics if a status is left out (the page must say what each means).
fn documented() -> BTreeMap<u16, String> {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/webhooks.md"))
        .expect("docs/webhooks.md");
    let section = page
        .split("\n## Answers\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("an Answers section");
    let (mut hundreds, mut codes) = (BTreeMap::new(), BTreeMap::new());
    for row in section.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (answers, class) = (cells[1], cells[2]);
        if !["delivered", "unavailable", "retryable", "failed"].contains(&class) {
            continue;
        }
        for token in answers.split('`').skip(1).step_by(2) {
            if let Some(hundred) = token.strip_suffix("xx").and_then(|h| h.parse::<u16>().ok()) {
                hundreds.insert(hundred, class.to_owned());
            } else if let Ok(code) = token.parse::<u16>() {
                codes.insert(code, class.to_owned());
            }
        }
    }
    (200..600)
        .map(|code| {
            let class = codes
                .get(&code)
                .or_else(|| hundreds.get(&(code / 100)))
                .unwrap_or_else(|| panic!("docs/webhooks.md does not say what {code} means"));
            (code, class.clone())
        })
        .collect()
}

#[tokio::test]
async fn every_status_is_classified_as_the_integrators_page_says() {
    let expected = documented();
    assert_eq!(expected[&409], "unavailable", "409 is retried");
    let statuses: Vec<u16> = expected.keys().copied().collect();
    let replies = statuses.clone();
    let script = Script::from_fn(move |_, index| Reply::status(replies[index]));
    let (_, server) = RecordingServer::start(script).await.expect("bind loopback");
    let agent = WebhookAgent::new(WebhookConfig::new(server.url("/hook"))).expect("config");
    let mut wrong = Vec::new();
    for code in &statuses {
        let outcome = agent.continue_session(&continuation("k")).await;
        if class(&outcome) != expected[code] {
            wrong.push(format!(
                "{code}: documented {}, got {outcome:?}",
                expected[code]
            ));
        }
    }
    assert_eq!(server.requests().len(), statuses.len());
    assert!(
        wrong.is_empty(),
        "docs/webhooks.md and the adapter disagree:\n{}",
        wrong.join("\n")
    );
}
