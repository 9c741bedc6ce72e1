//! Worker registrations: one live process per worker id; a dead holder's
//! registration goes stale and is taken over. Time is injected.

use chrono::Duration;
use nomos_continue::store::{Registration, Store};
use uuid::Uuid;

use super::{at, t0};

nomos_continue_tests::on_both_stores!(
    a_live_worker_id_is_refused_to_another_instance,
    a_stale_registration_is_taken_over,
    an_unregistered_worker_id_is_free_again,
);

const STALE: Duration = Duration::seconds(15);

async fn a_live_worker_id_is_refused_to_another_instance(store: Store) {
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    assert_eq!(
        store
            .register_worker("w1", first, t0(), STALE)
            .await
            .unwrap(),
        Registration::Registered
    );
    assert_eq!(
        store
            .register_worker("w1", second, at(1), STALE)
            .await
            .unwrap(),
        Registration::Duplicate { heartbeat_at: t0() },
        "the first instance is alive"
    );
    assert_eq!(
        store
            .register_worker("w1", first, at(2), STALE)
            .await
            .unwrap(),
        Registration::Registered,
        "registering again as the same instance is no conflict"
    );
    assert_eq!(
        store
            .register_worker("w2", second, at(2), STALE)
            .await
            .unwrap(),
        Registration::Registered,
        "another id is free"
    );
    // Heartbeats keep the id: 10 s after the last one is not stale.
    assert!(store.worker_heartbeat("w1", first, at(10)).await.unwrap());
    assert_eq!(
        store
            .register_worker("w1", second, at(20), STALE)
            .await
            .unwrap(),
        Registration::Duplicate {
            heartbeat_at: at(10)
        }
    );
}

async fn a_stale_registration_is_taken_over(store: Store) {
    let (dead, next) = (Uuid::new_v4(), Uuid::new_v4());
    store
        .register_worker("w1", dead, t0(), STALE)
        .await
        .unwrap();
    assert_eq!(
        store
            .register_worker("w1", next, at(15), STALE)
            .await
            .unwrap(),
        Registration::Duplicate { heartbeat_at: t0() },
        "exactly the staleness limit is not yet stale"
    );
    assert_eq!(
        store
            .register_worker("w1", next, at(16), STALE)
            .await
            .unwrap(),
        Registration::Registered,
        "a heartbeat older than the limit is a dead process's"
    );
    assert!(
        !store.worker_heartbeat("w1", dead, at(17)).await.unwrap(),
        "the old holder learns that its id was taken over"
    );
    assert!(store.worker_heartbeat("w1", next, at(17)).await.unwrap());
    assert!(
        !store.unregister_worker("w1", dead).await.unwrap(),
        "the old holder cannot remove the new one's registration"
    );
    assert_eq!(
        store
            .register_worker("w1", dead, at(18), STALE)
            .await
            .unwrap(),
        Registration::Duplicate {
            heartbeat_at: at(17)
        }
    );
}

async fn an_unregistered_worker_id_is_free_again(store: Store) {
    let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
    store
        .register_worker("w1", first, t0(), STALE)
        .await
        .unwrap();
    assert!(store.unregister_worker("w1", first).await.unwrap());
    assert!(!store.unregister_worker("w1", first).await.unwrap());
    assert_eq!(
        store
            .register_worker("w1", second, at(1), STALE)
            .await
            .unwrap(),
        Registration::Registered,
        "a graceful shutdown frees the id at once"
    );
}
