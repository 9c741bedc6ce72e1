//! A person's states (a protocol task's `input_required` or
//! `auth_required`): never continued, told to the operator once per
//! question, and the link waits for the task's next state.

use nomos_continue::clock::Clock;
use nomos_continue::store::{task_execution_id, LinkTask, Store, TaskSource};

use super::Rig;

nomos_continue_tests::on_both_stores!(
    a_task_waiting_for_a_person_is_told_once_and_continued_only_when_it_moves_on,
);

async fn a_task_waiting_for_a_person_is_told_once_and_continued_only_when_it_moves_on(
    store: Store,
) {
    let rig = Rig::new(store);
    rig.approve().await;
    let task = LinkTask {
        source: TaskSource::A2a,
        task_id: "export-7".into(),
    };
    let id = task_execution_id(task.source, &task.task_id);
    rig.link(&[id]).await;
    rig.store
        .keep_tasks(&[(id, task)], rig.clock.now())
        .await
        .expect("keep the task");
    // Another execution in that state first, so the status's class is
    // kept (as the API keeps it when a report arrives): a link whose status
    // is kept as a person's must still be read to be told.
    let earlier = uuid::Uuid::new_v4();
    rig.link(&[earlier]).await;
    rig.report(earlier, "TASK_STATE_INPUT_REQUIRED", "").await;
    rig.worker.run_once().await.expect("pass");
    assert_eq!(rig.agent.notices().len(), 1, "the earlier one is told");
    let told_of_task = || -> Vec<_> {
        (rig.agent.notices().into_iter())
            .filter(|n| n.message.contains("export-7"))
            .collect()
    };

    let question = "which account should the export be billed to?";
    rig.report(id, "TASK_STATE_INPUT_REQUIRED", question).await;

    let report = rig.worker.run_once().await.expect("pass");
    assert_eq!(report.plan.planned, 0, "{report:?}");
    assert!(
        rig.agent.continuations().is_empty(),
        "a person's state is never continued"
    );
    let notices = told_of_task();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let told = &notices[0].message;
    assert!(
        told.contains("\"export-7\"") && told.contains(question),
        "{told}"
    );
    assert!(told.contains("input from a person"), "{told}");

    // The same report again (a push sent twice), a sweep over the parked
    // link, another pass: nothing more is told, nothing continued.
    rig.report(id, "TASK_STATE_INPUT_REQUIRED", question).await;
    for _ in 0..2 {
        rig.worker.run_once().await.expect("pass");
    }
    assert_eq!(told_of_task().len(), 1);
    assert!(rig.agent.continuations().is_empty());

    // A new question is a new notice; an authorization is named as such.
    rig.report(id, "auth-required", "sign in to the warehouse")
        .await;
    rig.worker.run_once().await.expect("pass");
    let notices = told_of_task();
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(
        notices[1].message.contains("to authorize it"),
        "{}",
        notices[1].message
    );

    // Answered, the task moves on and fails: continued once, with the
    // failure.
    rig.report(id, "TASK_STATE_WORKING", "").await;
    rig.worker.run_once().await.expect("pass");
    rig.report(
        id,
        "TASK_STATE_FAILED",
        "the warehouse refused the credentials",
    )
    .await;
    rig.worker.run_once().await.expect("pass");
    rig.worker.run_once().await.expect("pass");
    let continued = rig.agent.continuations();
    assert_eq!(continued.len(), 1, "{continued:?}");
    assert!(continued[0]
        .note
        .contains("the warehouse refused the credentials"));
    assert_eq!(told_of_task().len(), 2);
}
