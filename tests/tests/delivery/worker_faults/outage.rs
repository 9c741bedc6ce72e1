//! What the outage cases share (a partition, connections exhausted, a full
//! disk): the request paths probed while the database cannot serve them,
//! each answer timed, and the failure episodes a replica's log shows.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use nomos_continue::store::Store;
use nomos_continue_tests::http::RecordedRequest;
use nomos_continue_tests::replica::Replica;
use nomos_continue_tests::wait::until;
use reqwest::StatusCode;
use serde_json::json;
use uuid::Uuid;

use super::{assert_all_delivered, Work};

/// The API's bound on a 503 during an outage (`docs/api.md`): a runtime
/// must learn at once that it has to retry.
pub(super) const ANSWER_WITHIN: Duration = Duration::from_secs(1);

/// Sends what a runtime sends (a status report, a tool result, an
/// approval) to `replica`, for `session` and `execution`; asserts each is
/// answered 503 with `Retry-After` within [`ANSWER_WITHIN`], and returns
/// how long each took, by path.
pub(super) async fn request_paths_answer_503(
    replica: &Replica,
    session: Uuid,
    execution: Uuid,
) -> Vec<(&'static str, Duration)> {
    let client = reqwest::Client::new();
    let base = format!("http://{}", replica.addr);
    let requests = [
        (
            "PUT /v1/executions/{id}",
            client
                .put(format!("{base}/v1/executions/{execution}"))
                .json(&json!({"status": "completed", "result": "ok"})),
        ),
        (
            "POST /v1/sessions/{id}/tool-results",
            client
                .post(format!("{base}/v1/sessions/{session}/tool-results"))
                .json(&json!({"text": format!("running, execution {execution}")})),
        ),
        (
            "POST /v1/sessions/{id}/approvals",
            client
                .post(format!("{base}/v1/sessions/{session}/approvals"))
                .json(&json!({"decision": "approve", "route": "button"})),
        ),
    ];
    let mut times = Vec::new();
    for (path, request) in requests {
        let sent = Instant::now();
        let response = request.send().await.expect("an answer");
        let took = sent.elapsed();
        let status = response.status();
        let retry_after = response.headers().get("retry-after").cloned();
        let body = response.text().await.unwrap_or_default();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}: {body}");
        assert!(retry_after.is_some(), "{path}: a 503 without Retry-After");
        assert!(
            took < ANSWER_WITHIN,
            "{path} answered its 503 after {took:?}, over the API's bound of {ANSWER_WITHIN:?}"
        );
        times.push((path, took));
    }
    times
}

/// The runtime, writing the executions' statuses itself through `store`
/// (a connection the outage spares) while the replica cannot.
pub(super) async fn runtime_reports(store: &Store, work: &Work) {
    let now = chrono::Utc::now();
    for id in work.executions() {
        store
            .upsert_execution_status(id, "completed", "ok", now, true)
            .await
            .expect("the runtime reports");
    }
}

/// After the outage: the runtime sends again what was refused (the
/// approval, the tool result and the report of `session`'s `execution`),
/// which joins `work`; then every execution is continued, each key once.
pub(super) async fn everything_completes(
    replica: &Replica,
    store: &Store,
    mut work: Work,
    (session, execution): (Uuid, Uuid),
    requests: impl Fn() -> Vec<RecordedRequest>,
) {
    replica.approve(session).await;
    replica.link(session, &[execution]).await;
    replica.put_status(execution, "completed", "ok").await;
    work.sessions.push((session, vec![execution]));
    work.wait_settled(store).await;
    assert_all_delivered(store, &work, &requests(), 1).await;
}

/// The failure episodes in a replica's log, by loop: how many started and
/// how many ended (see `store::Episode`).
pub(super) fn episodes(stderr: &str) -> BTreeMap<String, (usize, usize)> {
    let mut out: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for line in stderr.lines().map(plain) {
        let line = line.as_str();
        if let Some(what) = field(line, " failed: ")
            .filter(|_| line.contains("; retrying, logged again when it succeeds"))
        {
            out.entry(what).or_default().0 += 1;
        } else if let Some(what) = field(line, " works again after ") {
            out.entry(what).or_default().1 += 1;
        }
    }
    out
}

/// A log line without its terminal colours (`ESC [ … m`).
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

/// The loop's name in an episode line: the message's text before `marker`
/// (the message follows the log target's `episode: `).
fn field(line: &str, marker: &str) -> Option<String> {
    let message = line.split("episode: ").nth(1)?;
    let (what, _) = message.split_once(marker)?;
    Some(what.to_owned())
}

/// Asserts that every loop in `stderr` logged each of its failure
/// episodes once when it started and at most once when it ended (one
/// outage: at most one episode per loop), and, if named, that `loop_name`
/// had one.
pub(super) fn assert_logged_once(stderr: &str, loop_name: Option<&str>) {
    let found = episodes(stderr);
    for (what, (starts, ends)) in &found {
        assert!(
            *starts <= 1 && ends <= starts,
            "loop {what:?} logged {starts} starts and {ends} ends of one outage:\n{stderr}"
        );
    }
    if let Some(name) = loop_name {
        assert_eq!(
            found.get(name).map(|(starts, _)| *starts),
            Some(1),
            "no episode of {name:?} logged:\n{stderr}"
        );
    }
}

/// Waits until the replica's log shows the end of the worker's episode,
/// then asserts it logged one episode of the outage (see
/// [`assert_logged_once`]).
pub(super) async fn the_worker_logged_one_episode(replica: &Replica) {
    until("the end of the worker's episode logged", || async {
        let (_, ends) = *episodes(&replica.stderr()).get("worker pass")?;
        (ends == 1).then_some(())
    })
    .await;
    assert_logged_once(&replica.stderr(), Some("worker pass"));
}
