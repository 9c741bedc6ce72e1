//! The demo replays the seed's scenario end to end; its summary is counted
//! from the store, so these assertions fail if any continuation is lost,
//! doubled, or needed an operator message.

use std::sync::Arc;

use nomos_continue::commands::demo::{replay, Actor, Timeline};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_reaches_the_goal_with_no_operator_message_after_approval() -> anyhow::Result<()> {
    let timeline = Arc::new(Timeline::new(true));
    let summary = replay(timeline.clone()).await?;
    assert_eq!(summary.plan_steps, 4);
    assert_eq!(
        summary.fixes, 1,
        "the SSH failure is diagnosed and fixed once"
    );
    assert_eq!(summary.executions, 6, "4 steps + 1 fix + 1 retry");
    assert_eq!(
        summary.continuations, 6,
        "one automatic continuation per execution"
    );
    assert_eq!(summary.operator_messages_after_approval, 0);

    let events = timeline.events();
    let operator: Vec<_> = events
        .iter()
        .filter(|e| e.actor == Actor::Operator)
        .collect();
    assert_eq!(
        operator.len(),
        2,
        "the request and the approval, nothing after: {operator:?}"
    );
    let failed = events
        .iter()
        .position(|e| {
            e.actor == Actor::System
                && e.text
                    .contains("failed: ssh: connect to host 10.0.0.7 port 22: Connection refused")
        })
        .expect("the agent is re-invoked with the failure");
    let fix = events
        .iter()
        .position(|e| {
            e.actor == Actor::Agent && e.text.contains("sshd in the new container is not running")
        })
        .expect("the agent diagnoses it");
    assert!(failed < fix);
    assert!(events
        .last()
        .is_some_and(|e| e.text.contains("The goal is reached")));
    Ok(())
}
