//! `nomos-continue policy replay` and `policy capture` through the real
//! binary, on both stores: a log of decisions the built-in policy took is
//! replayed with the built-in (nothing changes) and with the hostile test
//! policy (which decides like it except on two inputs); the filters, the
//! exit statuses, the determinism check and a capture that `policy test`
//! then passes. The worker's compact rows (the input rebuilt from the
//! execution's result and checked against its hash) and rows written
//! whole before migration 037 are replayed side by side; a row whose
//! execution's result changed since is refused, not replayed.

use std::path::Path;
use std::process::{Command, Output};

use chrono::{Duration, Utc};
use nomos_continue::policy::types::DecisionInput;
use nomos_continue::policy::BUILTIN_POLICY_WASM;
use nomos_continue::policy::{codec, Limits, PolicyRuntime, Revision, BUILTIN_POLICY_PATH};
use nomos_continue::store::{DecisionFilter, NewDecision, Recorded, Store};
use nomos_continue::worker::{input_parts, log_hash};
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    let (store, dir) = nomos_continue_tests::db::fresh_sqlite().await;
    let url = format!("sqlite://{}", dir.path().join("nomos.db").display());
    replay_and_capture(&store, &url).await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    let Some(db) = nomos_continue_tests::db::fresh_postgres_db().await else {
        return;
    };
    replay_and_capture(&db.store, &db.url).await;
    db.cleanup().await;
}

fn golden(name: &str) -> DecisionInput {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("golden/decide/{name}.in"));
    let text = std::fs::read_to_string(&path).expect("a golden input");
    codec::decision_input(&text).expect("a valid input")
}

/// `input` as the built-in policy decides it, as the worker logs it
/// (compactly: its execution's result goes to the execution), or with
/// `output` recorded instead.
async fn logged(
    store: &Store,
    session: Uuid,
    input: &DecisionInput,
    output: Option<&str>,
) -> NewDecision {
    let mut input = input.clone();
    input.session.id = session.to_string();
    let input = &input;
    let execution_id = input.execution.id.parse().expect("an id");
    store
        .upsert_execution_status(
            execution_id,
            &input.execution.status,
            &input.execution.result,
            Utc::now(),
            true,
        )
        .await
        .expect("report");
    let mut d = whole(session, input, output);
    let Recorded::Whole { output, .. } = d.recorded else {
        unreachable!("whole")
    };
    d.recorded = Recorded::Compact {
        input: input_parts(input, 256 << 10).expect("parts"),
        answer: output.split('"').nth(3).expect("a kind").to_string(),
        answer_hash: log_hash(&output),
    };
    d
}

/// `input` as a row written before migration 037 holds it: whole.
fn whole(session: Uuid, input: &DecisionInput, output: Option<&str>) -> NewDecision {
    let builtin = PolicyRuntime::new(Limits::default()).expect("the built-in policy");
    let decided = builtin.decide_batch(std::slice::from_ref(input));
    let answer = codec::answer_line(&decided.value.expect("decides")[0]).expect("a line");
    NewDecision {
        session_id: session,
        execution_id: input.execution.id.parse().expect("an id"),
        revision: Revision::of(BUILTIN_POLICY_WASM).0,
        recorded: Recorded::Whole {
            input: serde_json::to_string(input).expect("JSON"),
            output: output.map_or_else(|| answer.trim_end().to_string(), str::to_string),
        },
        action: "continued".into(),
        idempotency_key: Some("c-1".into()),
        detail: None,
    }
}

/// `input` for an execution of its own (golden cases share their ids).
fn fresh(mut input: DecisionInput) -> DecisionInput {
    input.execution.id = Uuid::new_v4().to_string();
    input
}

fn with_status(mut input: DecisionInput, status: &str) -> DecisionInput {
    input.execution.status = status.into();
    input.execution.id = Uuid::new_v4().to_string();
    input
}

fn run(args: &[&str]) -> Output {
    Command::new(nomos_continue_tests::replica::binary())
        .args(args)
        .output()
        .expect("run nomos-continue")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn last_line(output: &Output) -> String {
    stdout(output)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

async fn replay_and_capture(store: &Store, url: &str) {
    let hostile = env!("HOSTILE_WASM");
    let continues = golden("cancelled-continues");
    let main: Uuid = continues.session.id.parse().expect("a session id");
    let other = Uuid::new_v4();
    let recent = [
        logged(store, main, &continues, None).await,
        logged(store, main, &fresh(golden("attempts-limit")), None).await,
        // The hostile policy traps on one status and answers an empty note
        // on the other; the built-in waits on both (neither is terminal).
        logged(store, main, &with_status(continues.clone(), "trap"), None).await,
        logged(
            store,
            main,
            &with_status(continues.clone(), "empty-note"),
            None,
        )
        .await,
        // Written before 037: whole.
        whole(other, &with_status(continues.clone(), "failed"), None),
    ];
    let now = Utc::now();
    store.record_decisions(&recent, now).await.expect("record");
    let old = [logged(
        store,
        other,
        &with_status(continues.clone(), "completed"),
        None,
    )
    .await];
    store
        .record_decisions(&old, now - Duration::hours(3))
        .await
        .expect("record");
    let db = ["--database-url", url];

    let same = run(&[&["policy", "replay", BUILTIN_POLICY_PATH][..], &db].concat());
    assert_eq!(same.status.code(), Some(0), "{}", stdout(&same));
    assert_eq!(last_line(&same), "replayed 6 decisions: 6 same, 0 changed");
    assert!(
        stdout(&same).contains("reproduced 6 of 6 sampled decisions"),
        "{}",
        stdout(&same)
    );

    let changed = run(&[&["policy", "replay", hostile][..], &db].concat());
    let text = stdout(&changed);
    assert_eq!(
        changed.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&changed.stderr)
    );
    assert_eq!(
        last_line(&changed),
        "replayed 6 decisions: 4 same, 2 changed"
    );
    assert_eq!(text.matches("wait -> error").count(), 2, "{text}");
    let allowed = run(&[&["policy", "replay", hostile, "--allow-changes"][..], &db].concat());
    assert_eq!(allowed.status.code(), Some(0));

    let other_id = other.to_string();
    let one = run(&[
        &["policy", "replay", hostile, "--session", &other_id][..],
        &db,
    ]
    .concat());
    assert_eq!(last_line(&one), "replayed 2 decisions: 2 same, 0 changed");
    let recent_only = run(&[&["policy", "replay", hostile, "--since", "1h"][..], &db].concat());
    assert_eq!(
        last_line(&recent_only),
        "replayed 5 decisions: 3 same, 2 changed"
    );

    // A capture becomes a golden case the policy passes.
    let all = store
        .decisions(DecisionFilter::default(), 100)
        .await
        .expect("read");
    let work = tempfile::tempdir().expect("tempdir");
    let to = work.path().join("golden/decide");
    let id = all[0].id.to_string();
    let captured = run(&[
        &["policy", "capture", &id, "--to", to.to_str().expect("path")][..],
        &db,
    ]
    .concat());
    assert_eq!(captured.status.code(), Some(0), "{captured:?}");
    let written = std::fs::read_to_string(to.join(format!("decision-{id}.in"))).expect("the .in");
    assert_eq!(codec::decision_input(&written).expect("reads"), continues);
    let golden_dir = work.path().join("golden");
    let test = run(&[
        "policy",
        "test",
        BUILTIN_POLICY_PATH,
        golden_dir.to_str().expect("path"),
    ]);
    assert_eq!(
        stdout(&test).lines().last(),
        Some("1 passed, 0 failed"),
        "{test:?}"
    );
    let missing = run(&[
        &[
            "policy",
            "capture",
            "999999",
            "--to",
            to.to_str().expect("path"),
        ][..],
        &db,
    ]
    .concat());
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no decision 999999"));

    // A recorded answer its own revision does not give again fails the
    // replay before any comparison can be trusted.
    let tampered = Uuid::new_v4();
    let wrong = logged(
        store,
        tampered,
        &with_status(continues.clone(), "aborted"),
        Some(r#"{"decision":"wait"}"#),
    )
    .await;
    store
        .record_decisions(&[wrong], Utc::now())
        .await
        .expect("record");
    let tampered_id = tampered.to_string();
    let check = run(&[
        &[
            "policy",
            "replay",
            BUILTIN_POLICY_PATH,
            "--session",
            &tampered_id,
            "--allow-changes",
        ][..],
        &db,
    ]
    .concat());
    assert_eq!(check.status.code(), Some(1), "{}", stdout(&check));
    assert!(
        stdout(&check).contains("NOT REPRODUCED"),
        "{}",
        stdout(&check)
    );

    // A compact row whose execution holds another result than the policy
    // saw (here: the execution had finished with it before) is refused by
    // its hash, by replay and by capture, never replayed as recorded.
    let drifted_session = Uuid::new_v4();
    let drifted = with_status(continues.clone(), "aborted");
    store
        .upsert_execution_status(
            drifted.execution.id.parse().expect("an id"),
            "aborted",
            "what the runtime said first",
            Utc::now(),
            true,
        )
        .await
        .expect("report");
    let d = logged(store, drifted_session, &drifted, None).await;
    store
        .record_decisions(&[d], Utc::now())
        .await
        .expect("record");
    let session_id = drifted_session.to_string();
    let refused = run(&[
        &[
            "policy",
            "replay",
            BUILTIN_POLICY_PATH,
            "--session",
            &session_id,
        ][..],
        &db,
    ]
    .concat());
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    assert!(
        stdout(&refused).contains("its input is no longer kept"),
        "{}",
        stdout(&refused)
    );
    assert_eq!(
        last_line(&refused),
        "replayed 1 decisions: 0 same, 1 changed"
    );
    let last = store
        .decisions(DecisionFilter::default(), 100)
        .await
        .expect("read");
    let id = last.last().expect("the drifted one").id.to_string();
    let not_captured = run(&[
        &["policy", "capture", &id, "--to", to.to_str().expect("path")][..],
        &db,
    ]
    .concat());
    assert_eq!(not_captured.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&not_captured.stderr).contains("no longer kept"));
}
