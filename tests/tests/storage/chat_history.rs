//! The store as `chatWith`'s [`ChatHistory`] ([`StoreHistory`], migration
//! 018), on SQLite and PostgreSQL: replies are stored once per continuation key, notices are
//! recorded once and never replayed, and the real `ChatAgent` over the store
//! calls the model once per key against a fake chat server on loopback.

use std::sync::Arc;

use nomos_continue::agent::chat::NOTE_LABEL;
use nomos_continue::agent::{
    Agent, ChatAgent, ChatConfig, ChatHistory, ChatTurn, Continuation, Notice, StoreHistory,
};
use nomos_continue::clock::ManualClock;
use nomos_continue::store::{Role, Store, StoreError};
use nomos_continue_tests::http::{RecordingServer, Reply, Script};
use serde_json::json;

use chrono::{DateTime, Utc};
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(
    the_chat_tables_go_down_and_up,
    a_reply_is_stored_once_per_key,
    racing_replies_with_one_key_store_one,
    notices_are_recorded_once_and_never_replayed,
    operator_turns_need_no_key,
    an_empty_key_is_refused,
    chat_agent_over_the_store_calls_the_model_once_per_key,
);

fn t0() -> DateTime<Utc> {
    "2026-11-30T04:00:00Z"
        .parse::<chrono::DateTime<chrono::Utc>>()
        .expect("a valid time")
}

/// The history over `store`, with its rows stamped at [`t0`].
fn history(store: &Store) -> StoreHistory {
    StoreHistory::new(store.clone(), Arc::new(ManualClock::new(t0())))
}

/// 018 reverts cleanly with turns and notices in its tables (both tables
/// go) and applies again, and the history works on the new tables.
async fn the_chat_tables_go_down_and_up(store: Store) {
    assert!(store
        .applied_migrations()
        .await
        .expect("applied")
        .contains(&18));
    let session = Uuid::new_v4();
    store
        .append_turn(session, Role::User, "hello", t0())
        .await
        .expect("turn");
    store
        .append_notice(session, "dropped", "n-1", t0())
        .await
        .expect("notice");
    store.undo_migrations(17).await.expect("undo 018");
    assert!(!store
        .tables()
        .await
        .expect("tables")
        .iter()
        .any(|t| t == "nomos_notices" || t == "nomos_chat_turns"));
    store.migrate().await.expect("018 again");
    assert!(store.turns(session).await.expect("turns").is_empty());
    assert!(store.notices(session).await.expect("notices").is_empty());
    store
        .append_turn(session, Role::User, "hello again", t0())
        .await
        .expect("turn");
    let turns = store.turns(session).await.expect("turns");
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].idempotency_key, None);
}

async fn a_reply_is_stored_once_per_key(store: Store) {
    let (session, other) = (Uuid::new_v4(), Uuid::new_v4());
    let h = history(&store);
    assert!(!h.has_reply(session, "k1").await.expect("has_reply"));
    h.append_assistant(session, "on it", "k1")
        .await
        .expect("first");
    h.append_assistant(session, "on it again", "k1")
        .await
        .expect("second is a no-op");
    assert!(h.has_reply(session, "k1").await.expect("has_reply"));
    assert!(!h.has_reply(session, "k2").await.expect("other key"));
    assert!(!h.has_reply(other, "k1").await.expect("other session"));
    h.append_assistant(session, "next step", "k2")
        .await
        .expect("another key");
    // The same key in another session is another continuation.
    h.append_assistant(other, "elsewhere", "k1")
        .await
        .expect("other session");

    let turns = h.turns(session).await.expect("turns");
    assert_eq!(
        turns,
        [
            ChatTurn::new("assistant", "on it"),
            ChatTurn::new("assistant", "next step")
        ]
    );
    let stored = store.turns(session).await.expect("stored");
    assert_eq!(stored[0].idempotency_key.as_deref(), Some("k1"));
    assert_eq!(stored[0].created_at, t0(), "stamped by the injected clock");
    assert_eq!(store.turns(other).await.expect("other").len(), 1);

    let again = store
        .append_turn_once(session, Role::Assistant, "x", "k1", t0())
        .await
        .expect("typed");
    assert_eq!(again, None, "the typed function reports the duplicate");
}

/// Two deliveries racing past `has_reply` both append: the index keeps one.
async fn racing_replies_with_one_key_store_one(store: Store) {
    let session = Uuid::new_v4();
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .append_turn_once(
                        session,
                        Role::Assistant,
                        &format!("reply {i}"),
                        "race",
                        t0(),
                    )
                    .await
            })
        })
        .collect();
    let mut inserted = 0;
    for task in tasks {
        if task.await.expect("task").expect("append").is_some() {
            inserted += 1;
        }
    }
    assert_eq!(inserted, 1);
    assert_eq!(store.turns(session).await.expect("turns").len(), 1);
}

async fn notices_are_recorded_once_and_never_replayed(store: Store) {
    let session = Uuid::new_v4();
    store
        .append_turn(session, Role::User, "create a container", t0())
        .await
        .expect("turn");
    let h = history(&store);
    h.append_notice(
        session,
        "execution x finished after the window closed",
        "n1",
    )
    .await
    .expect("notice");
    h.append_notice(session, "a different text, same key", "n1")
        .await
        .expect("repeat is a no-op");
    h.append_notice(session, "second notice", "n2")
        .await
        .expect("notice");

    let notices = store.notices(session).await.expect("notices");
    let got: Vec<(&str, &str)> = notices
        .iter()
        .map(|n| (n.idempotency_key.as_str(), n.message.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("n1", "execution x finished after the window closed"),
            ("n2", "second notice")
        ]
    );
    assert_eq!(
        h.turns(session).await.expect("turns"),
        [ChatTurn::new("user", "create a container")]
    );
    assert!(!h
        .has_reply(session, "n1")
        .await
        .expect("a notice is not a reply"));
    assert!(store
        .notices(Uuid::new_v4())
        .await
        .expect("unknown")
        .is_empty());
}

/// The operator's turns have no key; the partial index ignores them.
async fn operator_turns_need_no_key(store: Store) {
    let session = Uuid::new_v4();
    for _ in 0..3 {
        store
            .append_turn(session, Role::User, "continue", t0())
            .await
            .expect("turn");
    }
    assert_eq!(store.turns(session).await.expect("turns").len(), 3);
}

async fn an_empty_key_is_refused(store: Store) {
    let session = Uuid::new_v4();
    assert!(matches!(
        store
            .append_turn_once(session, Role::Assistant, "x", "", t0())
            .await,
        Err(StoreError::InvalidValue {
            field: "idempotency_key",
            ..
        })
    ));
    assert!(matches!(
        store.append_notice(session, "x", "", t0()).await,
        Err(StoreError::InvalidValue {
            field: "idempotency_key",
            ..
        })
    ));
}

/// The adapter `serve --agent-openai` builds, over the real store: the
/// stored turns are replayed, the note is sent but not stored, the reply is
/// stored, a redelivery with the same key does not call the model again, and
/// a notice reaches neither the model nor the turns.
async fn chat_agent_over_the_store_calls_the_model_once_per_key(store: Store) {
    let completion = json!({"choices": [{"message": {"role": "assistant", "content": "retrying with a new key"}}]});
    let (addr, server) = RecordingServer::start(Script::always(Reply::json(200, &completion)))
        .await
        .expect("fake chat server");
    let session = Uuid::new_v4();
    store
        .append_turn(session, Role::System, "you manage containers", t0())
        .await
        .expect("turn");
    store
        .append_turn(session, Role::User, "create container 101", t0())
        .await
        .expect("turn");
    store
        .append_turn(session, Role::Assistant, "started, execution e1", t0())
        .await
        .expect("turn");

    let agent = ChatAgent::new(
        ChatConfig::new(format!("http://{addr}"), "test-model"),
        Arc::new(history(&store)),
    )
    .expect("chat agent");
    let continuation = Continuation {
        session_id: session,
        idempotency_key: "cont-1".into(),
        executions: Vec::new(),
        note: "execution e1 failed: ssh: connection refused".into(),
        soul: "You will be re-invoked when async steps finish.".into(),
        traceparent: None,
        tracestate: None,
    };
    agent
        .continue_session(&continuation)
        .await
        .expect("delivered");
    agent
        .continue_session(&continuation)
        .await
        .expect("redelivered");
    agent
        .notify(&Notice {
            session_id: session,
            idempotency_key: "notice-1".into(),
            message: "dropped".into(),
            traceparent: None,
            tracestate: None,
        })
        .await
        .expect("notice");

    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one model call per key");
    let body = requests[0].json().expect("JSON request");
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        system.starts_with("you manage containers") && system.ends_with(&continuation.soul),
        "{system}"
    );
    let note = body["messages"][3]["content"].as_str().unwrap_or_default();
    assert_eq!(note, format!("{NOTE_LABEL}\n{}", continuation.note));

    let turns = store.turns(session).await.expect("turns");
    let contents: Vec<&str> = turns.iter().map(|t| t.content.as_str()).collect();
    assert_eq!(
        contents,
        [
            "you manage containers",
            "create container 101",
            "started, execution e1",
            "retrying with a new key"
        ]
    );
    assert_eq!(turns[3].idempotency_key.as_deref(), Some("cont-1"));
    assert!(
        !contents.iter().any(|c| c.contains("connection refused")),
        "the note is never stored"
    );
    assert_eq!(store.notices(session).await.expect("notices").len(), 1);
}
