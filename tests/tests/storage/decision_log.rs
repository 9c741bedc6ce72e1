//! The decision log's store functions on both backends: what is recorded,
//! compactly or whole (as before migration 037), reads back as written, the filters `policy replay` uses, and the purge
//! by age, in batches and through the rescuer's retention.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use nomos_continue::clock::ManualClock;
use nomos_continue::maintenance::Retention;
use nomos_continue::metrics::Metrics;
use nomos_continue::store::{
    DecisionFilter, InputParts, NewDecision, Recorded, Route, SeenWindow, Store, TaskSource,
};
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(
    recorded_decisions_read_back_in_order_and_filter,
    the_purge_deletes_by_age_in_batches,
    the_retention_task_purges_past_it,
    a_pass_of_many_decisions_is_recorded_whole,
    passes_of_every_size_leave_no_statement_prepared,
);

fn t0() -> DateTime<Utc> {
    "2026-11-30T04:00:00Z".parse().expect("a valid time")
}

/// Decision `n`: odd ones whole, even ones compact, every fourth with
/// each part that is usually absent (a task, a window, ids still running,
/// attempts, a cut result, a `now` apart from the decision's time, an
/// answer its action does not imply).
fn decision(session: Uuid, n: u32) -> NewDecision {
    let full = n.is_multiple_of(4);
    let recorded = match n.is_multiple_of(2) {
        false => Recorded::Whole {
            input: format!(r#"{{"n":{n},"text":"é \" \\ ok"}}"#),
            output: r#"{"decision":"wait"}"#.into(),
        },
        true => Recorded::Compact {
            input: InputParts {
                now: if full {
                    t0() - Duration::milliseconds(3)
                } else {
                    t0()
                },
                status: format!("status é {n}"),
                finished_at: full.then(|| t0() - Duration::seconds(2)),
                task: full.then(|| (TaskSource::A2a, format!("task-{n}"))),
                window: full.then(|| SeenWindow {
                    opened_at: t0() - Duration::minutes(5),
                    expires_at: t0() + Duration::minutes(25),
                    route: Route::Chat,
                }),
                continuations_in_window: if full { 2 } else { 0 },
                still_running: match full {
                    true => vec![Uuid::new_v4(), Uuid::new_v4()],
                    false => Vec::new(),
                },
                attempts: if full { 3 } else { 0 },
                result_cut: full.then_some(1024),
                hash: vec![n as u8; 16],
            },
            // A retry's re-decision: logged continued, answered wait.
            answer: if full { "wait" } else { "continue" }.into(),
            answer_hash: vec![0xab; 16],
        },
    };
    NewDecision {
        session_id: session,
        execution_id: Uuid::new_v4(),
        revision: format!("rev-{}", n % 3),
        recorded,
        action: if n.is_multiple_of(2) {
            "continued"
        } else {
            "dropped"
        }
        .into(),
        idempotency_key: n.is_multiple_of(2).then(|| format!("c-{n}")),
        detail: (!n.is_multiple_of(2)).then(|| "assent window closed".to_string()),
    }
}

async fn recorded_decisions_read_back_in_order_and_filter(store: Store) {
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let early: Vec<NewDecision> = (0..3).map(|n| decision(a, n)).collect();
    let late: Vec<NewDecision> = (3..5).map(|n| decision(b, n)).collect();
    assert_eq!(
        store.record_decisions(&early, t0()).await.expect("record"),
        3
    );
    let later = t0() + Duration::hours(2);
    assert_eq!(
        store.record_decisions(&late, later).await.expect("record"),
        2
    );
    assert_eq!(store.record_decisions(&[], later).await.expect("none"), 0);

    let all = store
        .decisions(DecisionFilter::default(), 100)
        .await
        .expect("read");
    let read: Vec<NewDecision> = all.iter().map(|d| d.decision.clone()).collect();
    assert_eq!(
        read,
        [early.clone(), late.clone()].concat(),
        "as written, in order"
    );
    assert!(all.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(all[0].decided_at, t0());
    assert_eq!(all[4].decided_at, later);

    let of_a = DecisionFilter {
        session_id: Some(a),
        ..DecisionFilter::default()
    };
    assert_eq!(store.decisions(of_a, 100).await.expect("read").len(), 3);
    let since = DecisionFilter {
        since: Some(t0() + Duration::hours(1)),
        ..DecisionFilter::default()
    };
    let recent = store.decisions(since, 100).await.expect("read");
    assert_eq!(
        recent.iter().map(|d| &d.decision).collect::<Vec<_>>(),
        late.iter().collect::<Vec<_>>()
    );
    // Paging: two at a time, after the last id read.
    let mut paged = Vec::new();
    let mut filter = DecisionFilter::default();
    loop {
        let page = store.decisions(filter, 2).await.expect("page");
        let Some(last) = page.last() else { break };
        filter.after_id = last.id;
        paged.extend(page.into_iter().map(|d| d.id));
    }
    assert_eq!(paged, all.iter().map(|d| d.id).collect::<Vec<_>>());

    let one = store
        .decision(all[1].id)
        .await
        .expect("read")
        .expect("found");
    assert_eq!(one, all[1]);
    assert_eq!(store.decision(-1).await.expect("read"), None);
}

async fn the_purge_deletes_by_age_in_batches(store: Store) {
    let s = Uuid::new_v4();
    for day in 0..3 {
        let batch: Vec<NewDecision> = (0..4).map(|n| decision(s, n)).collect();
        store
            .record_decisions(&batch, t0() + Duration::days(day))
            .await
            .expect("record");
    }
    let cutoff = t0() + Duration::days(1) + Duration::hours(1);
    // Three at a time: eight are older than the cutoff.
    assert_eq!(store.purge_decisions(cutoff, 3).await.expect("purge"), 3);
    assert_eq!(store.purge_decisions(cutoff, 3).await.expect("purge"), 3);
    assert_eq!(store.purge_decisions(cutoff, 3).await.expect("purge"), 2);
    assert_eq!(store.purge_decisions(cutoff, 3).await.expect("purge"), 0);
    let left = store
        .decisions(DecisionFilter::default(), 100)
        .await
        .expect("read");
    assert_eq!(left.len(), 4);
    assert!(left
        .iter()
        .all(|d| d.decided_at == t0() + Duration::days(2)));
}

async fn the_retention_task_purges_past_it(store: Store) {
    let s = Uuid::new_v4();
    let batch: Vec<NewDecision> = (0..5).map(|n| decision(s, n)).collect();
    store.record_decisions(&batch, t0()).await.expect("record");
    let clock = Arc::new(ManualClock::new(t0() + Duration::days(6)));
    let metrics = Arc::new(Metrics::default());
    let week = std::time::Duration::from_secs(7 * 24 * 3600);
    let keeping = Retention::new(store.clone(), clock.clone(), metrics.clone(), None);
    assert_eq!(keeping.purge_decisions().await.expect("no retention"), 0);
    let retention = Retention::new(store.clone(), clock.clone(), metrics.clone(), Some(week));
    assert_eq!(retention.purge_decisions().await.expect("within"), 0);
    clock.advance(Duration::days(1) + Duration::seconds(1));
    assert_eq!(retention.purge_decisions().await.expect("past"), 5);
    assert!(metrics
        .render(&Default::default())
        .contains("nomos_continue_decisions_purged_total 5"));
}

/// More decisions than one SQLite statement carries (500 rows): all are
/// recorded, in order.
async fn a_pass_of_many_decisions_is_recorded_whole(store: Store) {
    let s = Uuid::new_v4();
    let many: Vec<NewDecision> = (0..1_201).map(|n| decision(s, n)).collect();
    assert_eq!(
        store.record_decisions(&many, t0()).await.expect("record"),
        1_201
    );
    let read = store
        .decisions(DecisionFilter::default(), 2_000)
        .await
        .expect("read");
    let read: Vec<NewDecision> = read.into_iter().map(|d| d.decision).collect();
    assert_eq!(read, many);
}

/// Statements the connections of `store`'s pool keep prepared, summed over
/// every connection the pool may open (each is held while counting, so each
/// is counted once), and how many connections that is.
async fn prepared_statements(store: &Store) -> (usize, usize) {
    match (store.sqlite_pool(), store.pg_pool()) {
        (Some(pool), _) => prepared_on(pool).await,
        (_, Some(pool)) => prepared_on(pool).await,
        (None, None) => (0, 0),
    }
}

async fn prepared_on<DB>(pool: &sqlx::Pool<DB>) -> (usize, usize)
where
    DB: sqlx::Database + sqlx::database::HasStatementCache,
{
    use sqlx::Connection as _;
    let connections = pool.options().get_max_connections() as usize;
    let mut held = Vec::with_capacity(connections);
    let mut counted = 0;
    for _ in 0..connections {
        let conn = pool.acquire().await.expect("a connection");
        counted += conn.cached_statements_size();
        held.push(conn);
    }
    (counted, connections)
}

/// A pass's decisions are one multi-row `INSERT` whose text depends on how
/// many there are. Kept prepared, every pass size was a statement of its
/// own on every connection: a compiled `INSERT` of hundreds of rows is
/// hundreds of kilobytes, and under load SQLite's copies of them were most
/// of `serve`'s heap (issue 47). Passes of 60 sizes leave at most the one
/// fixed statement (the revisions' dictionary) prepared per connection.
async fn passes_of_every_size_leave_no_statement_prepared(store: Store) {
    let s = Uuid::new_v4();
    let (before, _) = prepared_statements(&store).await;
    for size in 1..=60 {
        let pass: Vec<NewDecision> = (0..size).map(|n| decision(s, n)).collect();
        store.record_decisions(&pass, t0()).await.expect("record");
    }
    let (after, connections) = prepared_statements(&store).await;
    let grown = after - before;
    assert!(
        grown <= connections,
        "{grown} statements stayed prepared after passes of 60 sizes on {connections} connections"
    );
}
