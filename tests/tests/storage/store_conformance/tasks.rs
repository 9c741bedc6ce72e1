//! What the protocols' receivers keep per task (migration 030): the push
//! token checked by its hash and expiry, the gathered artifacts'
//! compare-and-set, and the poller's query of overdue tasks.

use nomos_continue::store::{task_execution_id, LinkTask, Store, TaskAgent, TaskSource};
use uuid::Uuid;

use super::at;

const HASH: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
const OTHER: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

async fn kept_task(store: &Store, source: TaskSource, task_id: &str) -> Uuid {
    let id = task_execution_id(source, task_id);
    let task = LinkTask {
        source,
        task_id: task_id.into(),
    };
    store
        .keep_tasks(&[(id, task)], at(0))
        .await
        .expect("keep a task");
    id
}

fn agent() -> TaskAgent {
    TaskAgent {
        url: "http://agent.test/a2a".into(),
        version: "1.0".into(),
    }
}

/// The token is found by its hash, only before it expires, only for its
/// own execution; minting again replaces it and keeps the agent.
pub async fn a_push_token_is_checked_by_hash_and_expiry(store: Store) {
    let id = kept_task(&store, TaskSource::A2a, "task-1").await;
    let other = kept_task(&store, TaskSource::A2a, "task-2").await;
    // No push configuration for an execution that stands for no task.
    let bare = Uuid::new_v4();
    assert!(!store
        .mint_push(bare, HASH, at(100), None, at(1))
        .await
        .expect("mint"));
    assert!(store
        .mint_push(id, HASH, at(100), Some(&agent()), at(1))
        .await
        .expect("mint"));

    let found = store.push_task(id, HASH, at(50)).await.expect("check");
    let found = found.expect("the right token opens its task");
    assert_eq!(
        (found.task_id.as_str(), found.source),
        ("task-1", TaskSource::A2a)
    );
    assert_eq!(found.agent, Some(agent()));
    assert_eq!(
        store.push_task(id, OTHER, at(50)).await.expect("check"),
        None
    );
    assert_eq!(
        store.push_task(other, HASH, at(50)).await.expect("check"),
        None
    );
    assert_eq!(
        store.push_task(bare, HASH, at(50)).await.expect("check"),
        None
    );
    // Expired at its instant.
    assert_eq!(
        store.push_task(id, HASH, at(100)).await.expect("check"),
        None
    );

    // Minting again replaces the token; an absent agent keeps the kept one.
    assert!(store
        .mint_push(id, OTHER, at(200), None, at(2))
        .await
        .expect("mint"));
    assert_eq!(
        store.push_task(id, HASH, at(50)).await.expect("check"),
        None
    );
    let again = store.push_task(id, OTHER, at(150)).await.expect("check");
    assert_eq!(again.expect("the new token").agent, Some(agent()));
}

/// Artifacts are replaced only over what the caller read; the state and
/// the result wait are kept as written.
pub async fn artifacts_are_gathered_by_compare_and_set(store: Store) {
    let id = kept_task(&store, TaskSource::A2a, "task-cas").await;
    let first = r#"[{"id":"a","text":"one"}]"#;
    assert!(store
        .gather_artifacts(id, None, first, at(1))
        .await
        .expect("gather"));
    // A second writer that read "none" lost the race and must read again.
    assert!(!store
        .gather_artifacts(id, None, "[]", at(1))
        .await
        .expect("gather"));
    let both = r#"[{"id":"a","text":"one"},{"id":"b","text":"two"}]"#;
    assert!(store
        .gather_artifacts(id, Some(first), both, at(2))
        .await
        .expect("gather"));
    store
        .note_protocol(id, Some("TASK_STATE_WORKING"), at(3))
        .await
        .expect("note");
    store.note_protocol(id, None, at(4)).await.expect("note");
    store
        .set_result_wait(id, Some(("failed", "boom")), at(4))
        .await
        .expect("wait");
    let record = store.task_record(id).await.expect("read").expect("a task");
    assert_eq!(record.artifacts.as_deref(), Some(both));
    assert_eq!(record.protocol_state.as_deref(), Some("TASK_STATE_WORKING"));
    assert_eq!(record.heard_at, Some(at(4)));
    assert_eq!(record.result_wait.as_deref(), Some("failed"));
    assert_eq!(record.result_wait_message.as_deref(), Some("boom"));
    store
        .set_result_wait(id, Some(("completed", "")), at(5))
        .await
        .expect("wait");
    let record = store.task_record(id).await.expect("read").expect("a task");
    assert_eq!(record.result_wait_message, None);
    store.set_result_wait(id, None, at(5)).await.expect("clear");
    let record = store.task_record(id).await.expect("read").expect("a task");
    assert_eq!(
        (record.result_wait, record.result_wait_message),
        (None, None)
    );
    assert_eq!(store.task_record(Uuid::new_v4()).await.expect("read"), None);
}

/// The poller's query: tasks with an agent, not finished, silent since
/// before the given instant; longest silent first, at most `limit`.
pub async fn overdue_tasks_have_an_agent_and_are_unfinished(store: Store) {
    let quiet = kept_task(&store, TaskSource::A2a, "quiet").await;
    let heard = kept_task(&store, TaskSource::A2a, "heard").await;
    let done = kept_task(&store, TaskSource::A2a, "done").await;
    let no_agent = kept_task(&store, TaskSource::A2a, "no-agent").await;
    for id in [quiet, heard, done] {
        assert!(store
            .mint_push(id, HASH, at(1000), Some(&agent()), at(1))
            .await
            .expect("mint"));
    }
    assert!(store
        .mint_push(no_agent, HASH, at(1000), None, at(1))
        .await
        .expect("mint"));
    store
        .note_protocol(heard, Some("working"), at(20))
        .await
        .expect("note");
    store
        .note_protocol(quiet, Some("working"), at(5))
        .await
        .expect("note");
    store
        .upsert_execution_status(done, "failed", "", at(6), true)
        .await
        .expect("finish one");
    // `heard`'s execution reported, not finished: still a candidate.
    store
        .upsert_execution_status(heard, "working", "", at(20), false)
        .await
        .expect("report one");

    let ids = |tasks: Vec<nomos_continue::store::TaskRecord>| {
        tasks
            .into_iter()
            .map(|t| t.execution_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(store.overdue_tasks(at(10), 10).await.expect("overdue")),
        [quiet]
    );
    assert_eq!(
        ids(store.overdue_tasks(at(30), 10).await.expect("overdue")),
        [quiet, heard]
    );
    assert_eq!(
        ids(store.overdue_tasks(at(30), 1).await.expect("overdue")),
        [quiet]
    );
    assert!(store
        .overdue_tasks(at(1), 10)
        .await
        .expect("overdue")
        .is_empty());
}
