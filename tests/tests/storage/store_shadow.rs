//! The shadow policy revision and its disagreements on both backends: one
//! shadow for every replica, a promotion that is an activation like any
//! other (logged, so a rollback undoes it), and disagreements recorded and
//! counted per shadow revision.

use chrono::{DateTime, Duration, Utc};
use nomos_continue::store::{Disagreement, Store, StoreError};
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(
    a_saved_revision_goes_in_shadow_and_out_again,
    promoting_the_shadow_activates_it_and_logs_it,
    a_promotion_of_a_shadow_replaced_meanwhile_changes_nothing,
    disagreements_are_recorded_and_counted_per_shadow
);

fn now() -> DateTime<Utc> {
    "2026-11-30T04:00:00Z".parse().expect("a valid time")
}

/// A 64-hex revision id made of one repeated digit.
fn hash(digit: char) -> String {
    std::iter::repeat_n(digit, 64).collect()
}

async fn save(store: &Store, digit: char) -> String {
    let h = hash(digit);
    store
        .save_policy_revision(&h, b"\0asm", "p", &digit.to_string(), now())
        .await
        .expect("save");
    h
}

async fn a_saved_revision_goes_in_shadow_and_out_again(store: Store) {
    assert_eq!(store.policy_shadow().await.expect("shadow"), None);
    let unknown = store.set_policy_shadow(&hash('f'), now()).await;
    assert!(
        matches!(unknown, Err(StoreError::UnknownPolicy(_))),
        "{unknown:?}"
    );
    let (a, b) = (save(&store, 'a').await, save(&store, 'b').await);
    store.set_policy_shadow(&a, now()).await.expect("shadow a");
    let shadow = store.policy_shadow().await.expect("shadow").expect("set");
    assert_eq!(
        (shadow.hash.as_str(), shadow.wasm.as_slice()),
        (a.as_str(), &b"\0asm"[..])
    );
    // A second shadow replaces the first; the active revision is untouched.
    let later = now() + Duration::minutes(1);
    store.set_policy_shadow(&b, later).await.expect("shadow b");
    let shadow = store.policy_shadow().await.expect("shadow").expect("set");
    assert_eq!((shadow.hash, shadow.activated_at), (b.clone(), later));
    let head = store
        .policy_shadow_head()
        .await
        .expect("head")
        .expect("set");
    assert_eq!((head.hash, head.signature), (b, None));
    assert_eq!(store.active_policy().await.expect("active"), None);
    assert!(store.clear_policy_shadow().await.expect("clear"));
    assert!(!store.clear_policy_shadow().await.expect("clear again"));
    assert_eq!(store.policy_shadow().await.expect("shadow"), None);
    assert_eq!(store.policy_shadow_head().await.expect("head"), None);
}

async fn promoting_the_shadow_activates_it_and_logs_it(store: Store) {
    let (a, b) = (save(&store, 'a').await, save(&store, 'b').await);
    store.activate_policy(&a, now()).await.expect("activate a");
    store.set_policy_shadow(&b, now()).await.expect("shadow b");
    let at = now() + Duration::minutes(5);
    assert!(store.promote_policy_shadow(&b, at).await.expect("promote"));
    let active = store.active_policy().await.expect("active").expect("set");
    assert_eq!(
        (active.hash.as_str(), active.activated_at),
        (b.as_str(), at)
    );
    assert_eq!(store.policy_shadow().await.expect("shadow"), None);
    // Logged like any activation: a rollback returns to what it replaced.
    let (current, target) = store
        .rollback_target()
        .await
        .expect("target")
        .expect("something to return to");
    assert_eq!((current, target.hash), (b.clone(), a));
    // Nothing in shadow any more: nothing to promote.
    assert!(!store.promote_policy_shadow(&b, at).await.expect("promote"));
}

async fn a_promotion_of_a_shadow_replaced_meanwhile_changes_nothing(store: Store) {
    let (a, b) = (save(&store, 'a').await, save(&store, 'b').await);
    store.set_policy_shadow(&b, now()).await.expect("shadow b");
    // Decided against `a`, but `b` is in shadow now.
    assert!(!store
        .promote_policy_shadow(&a, now())
        .await
        .expect("promote"));
    assert_eq!(store.active_policy().await.expect("active"), None);
    let shadow = store.policy_shadow().await.expect("shadow").expect("kept");
    assert_eq!(shadow.hash, b);
}

fn disagreement(shadow: &str, n: u32) -> Disagreement {
    Disagreement {
        id: 0,
        at: now() + Duration::seconds(i64::from(n)),
        session_id: Uuid::new_v4(),
        execution_id: Uuid::new_v4(),
        active_revision: hash('a'),
        shadow_revision: shadow.to_owned(),
        input: format!(r#"{{"n":{n}}}"#),
        active_output: r#"{"decision":"wait"}"#.into(),
        shadow_output: r#"{"decision":"drop","reason":"no"}"#.into(),
    }
}

async fn disagreements_are_recorded_and_counted_per_shadow(store: Store) {
    let (b, c) = (hash('b'), hash('c'));
    assert_eq!(store.count_disagreements(&b).await.expect("count"), 0);
    store.record_disagreements(&[]).await.expect("nothing");
    let rows: Vec<Disagreement> = (0..3).map(|n| disagreement(&b, n)).collect();
    store.record_disagreements(&rows).await.expect("record");
    store
        .record_disagreements(&[disagreement(&c, 9)])
        .await
        .expect("record c");
    assert_eq!(store.count_disagreements(&b).await.expect("count"), 3);
    assert_eq!(store.count_disagreements(&c).await.expect("count"), 1);
    let read = store.disagreements(&b, 2).await.expect("read");
    assert_eq!(read.len(), 2, "at most the limit");
    // Newest first, each as recorded.
    for (got, want) in read.iter().zip(rows.iter().rev()) {
        assert!(got.id > 0);
        assert_eq!(
            Disagreement {
                id: 0,
                ..got.clone()
            },
            *want
        );
    }
    // The console's read: the same rows, short texts not cut.
    let shown = store.shown_disagreements(&b, 2).await.expect("read cut");
    assert_eq!(
        shown
            .into_iter()
            .map(|s| (s.row, s.left_out))
            .collect::<Vec<_>>(),
        read.into_iter().map(|d| (d, 0)).collect::<Vec<_>>()
    );
    // The count stops where it is asked to.
    assert_eq!(
        store.count_disagreements_up_to(&b, 2).await.expect("count"),
        2
    );
}
