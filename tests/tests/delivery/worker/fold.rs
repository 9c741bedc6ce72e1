//! Many executions of a session finishing together: the folded note is
//! capped, the rest summarised in one bounded line, and every execution is
//! still part of the one continuation and settled once.

use nomos_continue::store::{DeliveryKind, Settlement, Store};
use nomos_continue::worker::{FOLD_SEPARATOR, MAX_FOLDED_NOTE_BYTES, MAX_REST_LINE_BYTES};
use uuid::Uuid;

use super::Rig;

nomos_continue_tests::on_both_stores!(a_folded_note_is_capped_and_settles_every_execution);

/// Sixty executions with long results finish in one pass: their notes
/// (about 5 KiB each) would make a 300 KiB message, over the 64 KiB cap. The agent gets one
/// continuation naming all sixty, a note within the cap plus one summary
/// line, and each link is continued exactly once.
async fn a_folded_note_is_capped_and_settles_every_execution(store: Store) {
    let rig = Rig::new(store);
    rig.approve().await;
    let ids: Vec<Uuid> = (0..60).map(|_| Uuid::new_v4()).collect();
    rig.link(&ids).await;
    for (i, id) in ids.iter().enumerate() {
        let status = if i % 3 == 0 { "failed" } else { "completed" };
        rig.report(*id, status, &format!("output {i}\n{}", "y".repeat(6000)))
            .await;
    }

    let tick = rig.worker.run_once().await.expect("pass");
    assert_eq!((tick.plan.planned, tick.deliver.delivered), (1, 1));
    let calls = rig.agent.continuations();
    assert_eq!(calls.len(), 1);
    let note = &calls[0].note;
    let (kept, rest) = note.rsplit_once(FOLD_SEPARATOR).expect("a summary line");
    assert!(kept.len() <= MAX_FOLDED_NOTE_BYTES, "{} bytes", kept.len());
    assert!(rest.len() <= MAX_REST_LINE_BYTES, "{rest}");
    let shown = kept.split(FOLD_SEPARATOR).count();
    assert!(shown > 1 && shown < ids.len(), "{shown} notes shown");
    assert!(
        rest.starts_with(&format!(
            "… and {} more executions finished: ",
            ids.len() - shown
        )),
        "{rest}"
    );
    // Every execution is in the note (a note of its own or the summary
    // line, with its outcome) and in the continuation's execution list.
    for (i, id) in ids.iter().enumerate() {
        let outcome = if i % 3 == 0 { "failed" } else { "completed" };
        assert!(
            kept.contains(&format!("execution {id} {outcome}"))
                || rest.contains(&format!("{id} {outcome}")),
            "{id} missing from the note"
        );
    }
    let mut sent: Vec<Uuid> = calls[0].executions.iter().map(|e| e.id).collect();
    let mut want = ids.clone();
    sent.sort();
    want.sort();
    assert_eq!(sent, want);

    let summary = rig
        .store
        .session_summary(rig.session)
        .await
        .expect("summary");
    assert_eq!(summary.links.len(), ids.len());
    assert!(summary
        .links
        .iter()
        .all(|l| l.outcome == Some(Settlement::Continued)));
    let continuations: Vec<_> = summary
        .deliveries
        .iter()
        .filter(|d| d.kind == DeliveryKind::Continuation)
        .collect();
    assert_eq!(continuations.len(), 1);
    assert_eq!(continuations[0].execution_ids.len(), ids.len());

    let idle = rig.worker.run_once().await.expect("second pass");
    assert_eq!((idle.plan.planned, idle.deliver.attempted), (0, 0));
    assert_eq!(rig.agent.continuations().len(), 1);
}
