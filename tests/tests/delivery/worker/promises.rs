//! The delivery promises (docs/operations.md, P1–P6) under the ordinary
//! conditions that used to break them: a slow agent, a deny during a retry,
//! a failed record, an agent down for minutes, many big results.

use std::time::Duration as StdDuration;

use chrono::Duration;
use nomos_continue::agent::AgentError;
use nomos_continue::clock::Clock;
use nomos_continue::store::{DeliveryState, RetryOutcome, Settlement, Store};
use nomos_continue::worker::WorkerConfig;
use uuid::Uuid;

use super::Rig;

nomos_continue_tests::on_both_stores!(
    a_slow_call_keeps_its_lease_and_no_key_is_sent_twice,
    a_deny_during_a_retry_drops_the_continuation_with_one_notice,
    an_expiry_before_the_first_call_drops_the_continuation,
    an_accepted_call_whose_record_fails_is_not_made_again,
    an_agent_down_for_minutes_only_delays_delivery,
    the_retry_budget_is_wall_time_and_ends_with_one_notice,
    before_a_retry_the_policy_sees_the_failed_attempts,
    retry_after_is_honoured,
    seventeen_big_results_in_one_pass_are_all_continued,
    an_operator_retry_sends_a_failed_delivery_again_with_its_key,
    with_no_standby_behind_the_fence_reads_no_window_again,
);

pub(super) use nomos_continue_tests::wait::until_true as eventually;

/// A session per execution, each approved, linked and failed.
async fn failed_sessions(rig: &Rig, n: usize, result: &str) -> Vec<Uuid> {
    let mut sessions = Vec::new();
    for _ in 0..n {
        let (session, id) = (Uuid::new_v4(), Uuid::new_v4());
        rig.store
            .approve(
                session,
                nomos_continue::store::Route::Api,
                rig.clock.now(),
                Duration::minutes(30),
            )
            .await
            .expect("approve");
        rig.store
            .link(session, &[id], rig.clock.now())
            .await
            .expect("link");
        rig.report(id, "failed", result).await;
        sessions.push(session);
    }
    sessions
}

fn keys_are_unique(keys: &[String]) -> bool {
    let mut sorted = keys.to_vec();
    sorted.sort();
    sorted.dedup();
    sorted.len() == keys.len()
}

/// Item 1: a pass whose calls outlast the lease. Worker A may call one at a
/// time; its call hangs past the lease on the injected clock. Its lease is
/// renewed while the call runs, and it claimed only what it called, so
/// worker B takes the other deliveries and never A's: every key is sent
/// and accepted once.
async fn a_slow_call_keeps_its_lease_and_no_key_is_sent_twice(store: Store) {
    let rig = Rig::new(store);
    failed_sessions(&rig, 3, "boom").await;
    rig.worker.plan_once().await.expect("plan");
    let config = |id: &str| {
        WorkerConfig::default()
            .with_worker_id(id.into())
            .with_lease(StdDuration::from_secs(60))
            .with_renew_every(Some(StdDuration::from_millis(10)))
            .with_delivery_concurrency(1)
    };
    let (a, b) = (rig.worker(config("a")), rig.worker(config("b")));
    let gate = rig.agent.hold().await;
    let first = tokio::spawn(async move { a.deliver_once().await });
    eventually("A's first call", async || {
        rig.agent.continuations().len() == 1
    })
    .await;
    let held = rig.agent.continuations()[0].clone();

    rig.clock.advance(Duration::seconds(61));
    eventually("A's lease renewed past the new now", async || {
        let deliveries = rig
            .store
            .deliveries_for_session(held.session_id)
            .await
            .expect("ledger");
        deliveries.iter().any(|d| {
            d.idempotency_key == held.idempotency_key
                && d.lease_expires_at.is_some_and(|t| t > rig.clock.now())
        })
    })
    .await;
    let second = tokio::spawn(async move { b.deliver_once().await });
    eventually("B's call", async || rig.agent.continuations().len() >= 2).await;
    drop(gate);
    let (ra, rb) = (first.await.expect("join"), second.await.expect("join"));
    let (ra, rb) = (ra.expect("A's pass"), rb.expect("B's pass"));
    assert_eq!(ra.lease_lost + rb.lease_lost, 0);
    assert_eq!(ra.delivered + rb.delivered, 3, "{ra:?} {rb:?}");
    let sent: Vec<String> = rig
        .agent
        .continuations()
        .iter()
        .map(|c| c.idempotency_key.clone())
        .collect();
    assert_eq!(sent.len(), 3, "each key sent once: {sent:?}");
    assert!(keys_are_unique(&sent));
    assert!(keys_are_unique(&rig.agent.accepted()));
}

/// Item 2: the first call fails, the operator denies, and the retry is not
/// sent: the continuation is dropped with one notice saying why.
async fn a_deny_during_a_retry_drops_the_continuation_with_one_notice(store: Store) {
    let rig = Rig::new(store);
    let a = Uuid::new_v4();
    rig.approve().await;
    rig.link(&[a]).await;
    rig.report(a, "failed", "boom").await;
    rig.agent
        .script([Err(AgentError::Retryable("HTTP 500".into()))]);
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.retried, 1);

    rig.clock.advance(Duration::seconds(1));
    rig.store
        .deny(rig.session, rig.clock.now())
        .await
        .expect("deny");
    rig.clock.advance(Duration::minutes(5));
    for _ in 0..3 {
        rig.worker.run_once().await.expect("pass");
    }
    assert_eq!(rig.agent.continuations().len(), 1, "the retry is not sent");
    rig.agent.the_one_notice(&["denied"]);
    let summary = rig
        .store
        .session_summary(rig.session)
        .await
        .expect("summary");
    let continuation = summary
        .deliveries
        .iter()
        .find(|d| d.kind == nomos_continue::store::DeliveryKind::Continuation)
        .expect("continuation");
    assert_eq!(continuation.state, DeliveryState::Dropped);
    assert_eq!(summary.links[0].outcome, Some(Settlement::Dropped));
}

/// Item 2: a continuation planned inside the window but not yet sent when
/// the window expires is never sent.
async fn an_expiry_before_the_first_call_drops_the_continuation(store: Store) {
    let rig = Rig::new(store);
    let a = Uuid::new_v4();
    rig.approve().await;
    rig.link(&[a]).await;
    rig.clock.advance(Duration::minutes(29));
    rig.report(a, "completed", "ok").await;
    let plan = rig.worker.plan_once().await.expect("plan");
    assert_eq!(plan.planned, 1);
    rig.clock.advance(Duration::minutes(2));
    let tick = rig.worker.deliver_once().await.expect("deliver");
    assert_eq!(tick.dropped_unsent, 1);
    rig.worker.deliver_once().await.expect("deliver the notice");
    assert!(rig.agent.continuations().is_empty());
    rig.agent.the_one_notice(&["expired"]);
}

/// Item 5: the agent accepts, but recording it fails (the database refuses
/// the write). The call is not made again, however the pass ends, and the
/// next pass records it.
async fn an_accepted_call_whose_record_fails_is_not_made_again(store: Store) {
    let rig = Rig::new(store);
    failed_sessions(&rig, 2, "boom").await;
    let trigger = match rig.store.backend() {
        nomos_continue::store::Backend::Postgres => {
            "CREATE TABLE test_faults (x INTEGER); \
             CREATE FUNCTION test_fail_deliver() RETURNS trigger AS $$ BEGIN \
               IF EXISTS (SELECT 1 FROM test_faults) THEN RAISE EXCEPTION 'injected fault'; END IF; \
               RETURN NEW; END $$ LANGUAGE plpgsql; \
             CREATE TRIGGER test_fail_deliver BEFORE UPDATE ON nomos_deliveries FOR EACH ROW \
               WHEN (NEW.state = 'delivered') EXECUTE FUNCTION test_fail_deliver();"
        }
        nomos_continue::store::Backend::Sqlite => {
            "CREATE TABLE test_faults (x INTEGER); \
             CREATE TRIGGER test_fail_deliver BEFORE UPDATE ON nomos_deliveries \
               WHEN NEW.state = 'delivered' AND EXISTS (SELECT 1 FROM test_faults) \
               BEGIN SELECT RAISE(ABORT, 'injected fault'); END;"
        }
    };
    rig.store.execute_raw(trigger).await.expect("trigger");
    rig.store
        .execute_raw("INSERT INTO test_faults VALUES (1)")
        .await
        .expect("arm");
    let tick = rig
        .worker
        .run_once()
        .await
        .expect("the pass itself succeeds");
    assert_eq!(tick.deliver.unrecorded, 2, "{tick:?}");
    assert_eq!(rig.agent.accepted().len(), 2);

    rig.clock.advance(Duration::minutes(2));
    rig.store
        .execute_raw("DELETE FROM test_faults")
        .await
        .expect("disarm");
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.delivered, 2, "{tick:?}");
    assert_eq!(rig.agent.continuations().len(), 2, "never called again");
    rig.clock.advance(Duration::minutes(2));
    rig.worker.run_once().await.expect("pass");
    assert_eq!(rig.agent.continuations().len(), 2);
}

/// Item 6: the agent is unavailable for ten minutes (connection refused,
/// 503): the continuation waits and is delivered when it is back.
async fn an_agent_down_for_minutes_only_delays_delivery(store: Store) {
    let rig = Rig::new(store);
    failed_sessions(&rig, 1, "boom").await;
    let start = rig.clock.now();
    let mut failures = 0;
    while rig.clock.now() - start < Duration::minutes(10) {
        rig.agent
            .script([Err(AgentError::unavailable("connection refused"))]);
        let tick = rig.worker.run_once().await.expect("pass");
        failures += tick.deliver.retried;
        assert_eq!(tick.deliver.gave_up, 0);
        rig.clock.advance(Duration::seconds(61));
    }
    assert!(failures >= 10, "{failures} failed calls");
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.delivered, 1);
    assert!(rig.agent.notices().is_empty());
}

/// Item 6: past the budget (15 minutes of failures by default) the delivery
/// ends `failed`, its link too, and one notice says how to retry it.
async fn the_retry_budget_is_wall_time_and_ends_with_one_notice(store: Store) {
    let rig = Rig::new(store);
    failed_sessions(&rig, 1, "boom").await;
    let mut passes = 0;
    loop {
        rig.agent.script([Err(AgentError::unavailable("HTTP 503"))]);
        let tick = rig.worker.run_once().await.expect("pass");
        rig.clock.advance(Duration::seconds(61));
        passes += 1;
        if tick.deliver.gave_up == 1 {
            break;
        }
        assert!(passes < 40, "never gave up");
    }
    for _ in 0..3 {
        rig.worker.run_once().await.expect("the notice");
    }
    rig.agent.the_one_notice(&["nomos-continue retry"]);
    let calls = rig.agent.continuations().len();
    assert!(
        (15..=17).contains(&calls),
        "{calls} calls in 15 minutes of 60 s backoff"
    );
}

/// Item 11: the policy is asked again before each retry and sees the failed
/// attempts (answers, not shortages); the default policy gives up after 5,
/// with one notice, instead of the host retrying for its whole budget.
async fn before_a_retry_the_policy_sees_the_failed_attempts(store: Store) {
    let rig = Rig::new(store);
    let sessions = failed_sessions(&rig, 1, "boom").await;
    // Two shortages first: they do not count.
    rig.agent.script([
        Err(AgentError::unavailable("connection refused")),
        Err(AgentError::unavailable("connection refused")),
    ]);
    for _ in 0..5 {
        rig.agent
            .script([Err(AgentError::Retryable("HTTP 500".into()))]);
    }
    let mut dropped = 0;
    for _ in 0..10 {
        let tick = rig.worker.run_once().await.expect("pass");
        dropped += tick.deliver.dropped_unsent;
        rig.clock.advance(Duration::seconds(61));
    }
    assert_eq!(dropped, 1);
    assert_eq!(
        rig.agent.continuations().len(),
        7,
        "2 shortages and 5 failed answers, then the policy gives up"
    );
    rig.agent.the_one_notice(&["failed 5 times"]);
    let summary = rig
        .store
        .session_summary(sessions[0])
        .await
        .expect("summary");
    assert_eq!(summary.links[0].outcome, Some(Settlement::Dropped));
}

/// Item 6: a 429 with `Retry-After: 120` is not called again before then.
async fn retry_after_is_honoured(store: Store) {
    let rig = Rig::new(store);
    failed_sessions(&rig, 1, "boom").await;
    rig.agent.script([Err(AgentError::Unavailable {
        message: "HTTP 429".into(),
        retry_after: Some(StdDuration::from_secs(120)),
    })]);
    rig.worker.run_once().await.expect("pass");
    rig.clock.advance(Duration::seconds(119));
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.attempted, 0, "not before Retry-After");
    rig.clock.advance(Duration::seconds(1));
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.delivered, 1);
}

/// Item 4: seventeen 300 KB results found in one pass exceed the policy's
/// 4 MiB input cap together; each is decided, none is dropped.
async fn seventeen_big_results_in_one_pass_are_all_continued(store: Store) {
    let rig = Rig::new(store);
    let result = "x".repeat(300_000);
    failed_sessions(&rig, 17, &result).await;
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.plan.policy_failures, 0, "{tick:?}");
    assert_eq!(tick.plan.planned, 17);
    let continuations = rig.agent.continuations();
    assert_eq!(continuations.len(), 17);
    assert!(rig.agent.notices().is_empty());
    // The policy saw each result cut to its input cap (256 KiB); the agent
    // gets it whole, whether the call was built from the plan's read (the
    // continuations the plan claimed) or from the deliver step's own.
    for c in &continuations {
        let [e] = &c.executions[..] else {
            panic!("one execution per continuation: {:?}", c.executions.len());
        };
        assert_eq!(e.result.len(), result.len(), "the whole result");
        assert_eq!(
            (e.status.as_str(), e.outcome.as_str()),
            ("failed", "failed")
        );
    }
}

/// The operator's retry: a delivery that ended `failed` is sent again with
/// the same key once asked, and its link ends `continued`; a pending one
/// cannot be retried, nor one whose window closed.
async fn an_operator_retry_sends_a_failed_delivery_again_with_its_key(store: Store) {
    let rig = Rig::new(store);
    let a = Uuid::new_v4();
    rig.approve().await;
    rig.link(&[a]).await;
    rig.report(a, "failed", "boom").await;
    rig.agent.script([Err(AgentError::Permanent(
        "HTTP 404 unknown session".into(),
    ))]);
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.gave_up, 1);
    rig.worker.run_once().await.expect("the notice");
    let summary = rig
        .store
        .session_summary(rig.session)
        .await
        .expect("summary");
    let failed = summary
        .deliveries
        .iter()
        .find(|d| d.state == DeliveryState::Failed)
        .expect("failed delivery")
        .clone();

    let notice = summary
        .deliveries
        .iter()
        .find(|d| d.kind == nomos_continue::store::DeliveryKind::Notice)
        .expect("notice");
    assert_eq!(
        rig.store
            .retry_delivery(Uuid::new_v4(), rig.clock.now())
            .await
            .expect("retry"),
        RetryOutcome::NotFound
    );
    assert!(matches!(
        rig.store
            .retry_delivery(notice.id, rig.clock.now())
            .await
            .expect("retry"),
        RetryOutcome::NotEnded(DeliveryState::Delivered)
    ));
    let retried = rig
        .store
        .retry_delivery(failed.id, rig.clock.now())
        .await
        .expect("retry");
    assert!(matches!(retried, RetryOutcome::Retried(_)), "{retried:?}");
    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!(tick.deliver.delivered, 1);
    let calls = rig.agent.continuations();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].idempotency_key, failed.idempotency_key);
    let summary = rig
        .store
        .session_summary(rig.session)
        .await
        .expect("summary");
    assert_eq!(summary.links[0].outcome, Some(Settlement::Continued));

    // Once delivered it is not "ended"; and a closed window refuses.
    rig.store
        .deny(rig.session, rig.clock.now())
        .await
        .expect("deny");
    assert!(matches!(
        rig.store
            .retry_delivery(failed.id, rig.clock.now())
            .await
            .expect("retry"),
        RetryOutcome::NotEnded(DeliveryState::Delivered)
    ));
}

/// The standby fence (on by default) with no standby behind at its first
/// look waited for nothing, so its calls go out as claimed: the windows
/// their claims checked are not read again (the second look is for a call
/// that waited, during which a deny may have landed). Each continuation's
/// call read its window once more when this said "open after waiting".
async fn with_no_standby_behind_the_fence_reads_no_window_again(store: Store) {
    let rig = Rig::new(store);
    assert!(rig.worker.config().standby_fence.is_some());
    assert_eq!(rig.worker.standby_gate().await, "open");
}
