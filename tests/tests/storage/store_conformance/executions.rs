//! Batched reads of the `executions` relation (the deliver step's load).

use nomos_continue::store::Store;
use uuid::Uuid;

use super::{at, ids, read_execution};

/// `executions` returns the reported executions among the ids, in the
/// caller's order, once each; unknown ids and an empty list yield nothing.
pub async fn executions_batch_read_keeps_order(store: Store) {
    let known = ids(3);
    for (i, id) in known.iter().enumerate() {
        let status = if i == 1 { "failed" } else { "completed" };
        store
            .upsert_execution_status(*id, status, &format!("result {i}"), at(i as i64), true)
            .await
            .expect("status");
    }
    let unknown = Uuid::new_v4();
    let asked = [known[2], unknown, known[0], known[2], known[1]];
    let got = store.executions(&asked).await.expect("batch read");
    let got_ids: Vec<Uuid> = got.iter().map(|e| e.id).collect();
    assert_eq!(got_ids, vec![known[2], known[0], known[1]]);
    assert_eq!(got[2].status, "failed");
    assert_eq!(got[1].result, "result 0");
    for execution in &got {
        assert_eq!(
            Some(execution),
            read_execution(&store, execution.id).await.as_ref()
        );
    }
    assert!(store.executions(&[]).await.expect("empty").is_empty());
    assert!(store
        .executions(&[unknown])
        .await
        .expect("unknown")
        .is_empty());
}
