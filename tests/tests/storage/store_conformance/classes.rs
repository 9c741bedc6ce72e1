//! The classes each policy revision gave each status (migration 018), and
//! what a status waiting for a person waits for (migration 030).

use nomos_continue::store::{Store, StoredClass};
use uuid::Uuid;

use super::{at, ready_session, t0};

fn class(status: &str, outcome: Option<&str>) -> StoredClass {
    StoredClass {
        status: status.into(),
        outcome: outcome.map(Into::into),
        person: None,
    }
}

fn person(status: &str, need: &str) -> StoredClass {
    StoredClass {
        person: Some(need.into()),
        ..class(status, None)
    }
}

fn texts(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

pub async fn status_classes_round_trip_per_revision(store: Store) {
    let saved = [
        class("done", Some("completed")),
        class("running", None),
        class("it's \"odd\" [é]", Some("cancelled")),
    ];
    assert_eq!(
        store
            .save_status_classes("rev-a", &saved, t0())
            .await
            .unwrap(),
        3
    );
    let asked = texts(&["running", "done", "it's \"odd\" [é]", "unknown", "done"]);
    let read = store.status_classes("rev-a", &asked).await.unwrap();
    assert_eq!(read, [saved[0].clone(), saved[2].clone(), saved[1].clone()]);
    assert!(read[0].is_terminal() && !read[2].is_terminal());
    // Another revision's classes are its own.
    assert!(store
        .status_classes("rev-b", &asked)
        .await
        .unwrap()
        .is_empty());
    assert!(store.status_classes("rev-a", &[]).await.unwrap().is_empty());
}

pub async fn saving_a_class_again_keeps_the_first(store: Store) {
    let first = [class("done", Some("completed"))];
    store
        .save_status_classes("rev", &first, t0())
        .await
        .unwrap();
    let again = [class("done", Some("failed")), class("new", None)];
    assert_eq!(
        store
            .save_status_classes("rev", &again, at(1))
            .await
            .unwrap(),
        1
    );
    let read = store
        .status_classes("rev", &texts(&["done", "new"]))
        .await
        .unwrap();
    assert_eq!(read, [first[0].clone(), again[1].clone()]);
    // Many rows at once (more than one insert's worth).
    let many: Vec<StoredClass> = (0..450).map(|i| class(&format!("s{i:03}"), None)).collect();
    assert_eq!(
        store.save_status_classes("rev", &many, t0()).await.unwrap(),
        450
    );
    let names: Vec<String> = many.iter().map(|c| c.status.clone()).collect();
    assert_eq!(store.status_classes("rev", &names).await.unwrap(), many);
}

pub async fn an_outcome_outside_the_contract_is_refused(store: Store) {
    let bad = [class("done", Some("finished"))];
    assert!(store.save_status_classes("rev", &bad, t0()).await.is_err());
}

pub async fn a_person_class_is_kept_and_read_back(store: Store) {
    let saved = [
        person("input-required", "input"),
        person("TASK_STATE_AUTH_REQUIRED", "authorization"),
        class("working", None),
    ];
    assert_eq!(
        store
            .save_status_classes("rev", &saved, t0())
            .await
            .unwrap(),
        3
    );
    let read = store
        .status_classes(
            "rev",
            &texts(&["input-required", "working", "TASK_STATE_AUTH_REQUIRED"]),
        )
        .await
        .unwrap();
    assert_eq!(read, [saved[1].clone(), saved[0].clone(), saved[2].clone()]);
    assert!(read.iter().all(|c| !c.is_terminal()));
}

pub async fn a_person_class_outside_the_contract_or_terminal_is_refused(store: Store) {
    let unknown = [person("input-required", "approval")];
    assert!(store
        .save_status_classes("rev", &unknown, t0())
        .await
        .is_err());
    let terminal = [StoredClass {
        person: Some("input".into()),
        ..class("done", Some("completed"))
    }];
    assert!(store
        .save_status_classes("rev", &terminal, t0())
        .await
        .is_err());
    assert!(store
        .status_classes("rev", &texts(&["input-required", "done"]))
        .await
        .unwrap()
        .is_empty());
}

pub async fn statuses_to_classify_are_those_of_pending_work_without_a_class(store: Store) {
    let (session, execs) = ready_session(&store, 2).await;
    let running = Uuid::new_v4();
    store.link(session, &[running], t0()).await.unwrap();
    store
        .upsert_execution_status(running, "running", "", at(1), false)
        .await
        .unwrap();
    // Unlinked, or linked but silent: nothing to classify.
    store
        .upsert_execution_status(Uuid::new_v4(), "orphan", "", at(1), false)
        .await
        .unwrap();
    store.link(session, &[Uuid::new_v4()], t0()).await.unwrap();
    assert_eq!(
        store.statuses_to_classify("rev", 10).await.unwrap(),
        texts(&["completed", "running"])
    );
    assert_eq!(
        store.statuses_to_classify("rev", 1).await.unwrap(),
        texts(&["completed"])
    );
    let kept = [class("completed", Some("completed"))];
    store.save_status_classes("rev", &kept, t0()).await.unwrap();
    assert_eq!(
        store.statuses_to_classify("rev", 10).await.unwrap(),
        texts(&["running"])
    );
    assert_eq!(
        store.statuses_to_classify("other", 10).await.unwrap(),
        texts(&["completed", "running"])
    );
    // Settled links no longer count.
    store
        .drop_links_seen(session, &execs, "done", None, at(2), None)
        .await
        .unwrap();
    assert_eq!(
        store.statuses_to_classify("other", 10).await.unwrap(),
        texts(&["running"])
    );
}
