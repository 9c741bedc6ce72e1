//! Store conformance: one set of test bodies, run against SQLite (a temp
//! file) and PostgreSQL (a fresh database on the machine's server).
//!
//! Each body is an `async fn name(store: Store)`; the `conformance!` macro
//! generates `sqlite::name` and `postgres::name` tests for it (filter with
//! `cargo test ... sqlite::` or `postgres::`). The PostgreSQL half skips
//! with a message when the server is unreachable, and fails under `CI=true`.
//! No sleeps: time is injected through the `now` arguments.

mod classes;
mod deliveries;
mod executions;
mod faults;
mod link_data;
mod links;
mod migrations;
mod misc;
mod operator;
mod plan;
mod tasks;
mod workers;

/// A policy revision that has classified no status: every reported link is
/// a candidate of the worker's poll.
pub(crate) const NO_REVISION: &str = "no-revision";

use nomos_continue::store::{ContinuationPlan, Delivery, Execution, PlanOutcome, Route, Store};

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

nomos_continue_tests::on_both_stores! {
    migrations::migrations_up_down_up => migrations_up_down_up,
    migrations::a_newer_database_is_refused => a_newer_database_is_refused,
    migrations::a_pre_release_database_is_refused => a_pre_release_database_is_refused,
    migrations::the_next_version_is_a_newer_release => the_next_version_is_a_newer_release,
    migrations::history_settled_before_018_reads_as_continued => history_settled_before_018_reads_as_continued,
    misc::malformed_input_is_typed => malformed_input_is_typed,
    misc::unknown_session_is_empty => unknown_session_is_empty,
    misc::approval_extension_keeps_opened_at_and_count => approval_extension_keeps_opened_at_and_count,
    misc::approval_after_closed_window_opens_new_one => approval_after_closed_window_opens_new_one,
    misc::deny_without_open_window_is_noop => deny_without_open_window_is_noop,
    misc::approval_duration_is_bounded => approval_duration_is_bounded,
    misc::turns_keep_order => turns_keep_order,
    misc::policy_revisions_and_activation => policy_revisions_and_activation,
    misc::policy_rollback_target_and_compare_and_set => policy_rollback_target_and_compare_and_set,
    misc::status_for_unknown_execution_creates_it => status_for_unknown_execution_creates_it,
    misc::status_upsert_wakes_listeners => status_upsert_wakes_listeners,
    executions::executions_batch_read_keeps_order => executions_batch_read_keeps_order,
    faults::a_report_after_a_terminal_one_is_not_applied => a_report_after_a_terminal_one_is_not_applied,
    faults::concurrent_terminal_reports_apply_once => concurrent_terminal_reports_apply_once,
    faults::null_columns_of_a_runtime_relation_stall_nobody => null_columns_of_a_runtime_relation_stall_nobody,
    faults::an_undecodable_row_is_skipped_and_paging_goes_on => an_undecodable_row_is_skipped_and_paging_goes_on,
    link_data::a_tool_results_trace_wins_and_a_reports_only_fills => a_tool_results_trace_wins_and_a_reports_only_fills,
    link_data::a_kept_trace_changes_no_link => a_kept_trace_changes_no_link,
    link_data::a_linked_task_is_kept_once_beside_its_trace => a_linked_task_is_kept_once_beside_its_trace,
    tasks::a_push_token_is_checked_by_hash_and_expiry => a_push_token_is_checked_by_hash_and_expiry,
    tasks::artifacts_are_gathered_by_compare_and_set => artifacts_are_gathered_by_compare_and_set,
    tasks::overdue_tasks_have_an_agent_and_are_unfinished => overdue_tasks_have_an_agent_and_are_unfinished,
    links::link_is_idempotent => link_is_idempotent,
    links::first_link_wins => first_link_wins,
    links::pending_links_page_with_cursor => pending_links_page_with_cursor,
    links::links_classified_running_are_not_polled => links_classified_running_are_not_polled,
    links::backlog_counts_finished_unsettled_links => backlog_counts_finished_unsettled_links,
    links::session_snapshot_lists_still_running => session_snapshot_lists_still_running,
    links::drop_links_records_notice_once => drop_links_records_notice_once,
    plan::plan_happy_path => plan_happy_path,
    plan::plan_session_busy => plan_session_busy,
    plan::plan_link_taken => plan_link_taken,
    plan::plan_window_closed => plan_window_closed,
    plan::plan_cap_reached => plan_cap_reached,
    plan::concurrent_plans_one_wins => concurrent_plans_one_wins,
    deliveries::claim_lease_expiry_reclaim => claim_lease_expiry_reclaim,
    deliveries::lost_lease_changes_nothing => lost_lease_changes_nothing,
    deliveries::a_claim_is_stamped_no_earlier_than_its_window_opened => a_claim_is_stamped_no_earlier_than_its_window_opened,
    deliveries::failed_attempts_give_up_and_settle => failed_attempts_give_up_and_settle,
    deliveries::release_expired_leases_counts => release_expired_leases_counts,
    deliveries::concurrent_claims_never_overlap => concurrent_claims_never_overlap,
    operator::every_notice_is_queued_for_the_operator => every_notice_is_queued_for_the_operator,
    operator::operator_copies_are_claimed_once_and_recorded_by_their_claim => operator_copies_are_claimed_once_and_recorded_by_their_claim,
    operator::a_notice_reaches_no_one_only_when_both_channels_failed => a_notice_reaches_no_one_only_when_both_channels_failed,
    operator::old_copies_expire_rather_than_page_late => old_copies_expire_rather_than_page_late,
    operator::the_operator_drops_a_pending_continuation_with_one_notice => the_operator_drops_a_pending_continuation_with_one_notice,
    operator::executions_running_past_the_threshold_are_stuck => executions_running_past_the_threshold_are_stuck,
    classes::status_classes_round_trip_per_revision => status_classes_round_trip_per_revision,
    classes::saving_a_class_again_keeps_the_first => saving_a_class_again_keeps_the_first,
    classes::an_outcome_outside_the_contract_is_refused => an_outcome_outside_the_contract_is_refused,
    classes::a_person_class_is_kept_and_read_back => a_person_class_is_kept_and_read_back,
    classes::a_person_class_outside_the_contract_or_terminal_is_refused => a_person_class_outside_the_contract_or_terminal_is_refused,
    classes::statuses_to_classify_are_those_of_pending_work_without_a_class => statuses_to_classify_are_those_of_pending_work_without_a_class,
}

// ---- shared helpers for the bodies ------------------------------------------

/// The injected clock's origin.
pub(crate) fn t0() -> DateTime<Utc> {
    "2026-11-30T04:00:00Z"
        .parse::<chrono::DateTime<chrono::Utc>>()
        .expect("a valid time")
}

/// `t0` plus seconds.
pub(crate) fn at(secs: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(secs)
}

/// Ids in a stable order.
pub(crate) fn ids(n: usize) -> Vec<Uuid> {
    (0..n).map(|_| Uuid::new_v4()).collect()
}

/// An approved session with `n` linked executions that reported `completed`.
pub(crate) async fn ready_session(store: &Store, n: usize) -> (Uuid, Vec<Uuid>) {
    let session = Uuid::new_v4();
    store
        .approve(session, Route::Button, t0(), Duration::minutes(30))
        .await
        .expect("approve");
    let execs = ids(n);
    store.link(session, &execs, t0()).await.expect("link");
    for e in &execs {
        store
            .upsert_execution_status(*e, "completed", "ok", at(1), true)
            .await
            .expect("status");
    }
    (session, execs)
}

/// Plans a continuation with a fresh key and a cap of 20, expecting success.
pub(crate) async fn planned(
    store: &Store,
    session: Uuid,
    execs: &[Uuid],
    now: DateTime<Utc>,
) -> Delivery {
    let key = format!("k-{}", Uuid::new_v4());
    let plan = ContinuationPlan {
        session_id: session,
        execution_ids: execs,
        note: "execution finished",
        policy_revision: "rev",
        idempotency_key: &key,
        hard_cap: 20,
    };
    match store
        .plan_continuations(&[plan], now)
        .await
        .expect("plan")
        .remove(0)
    {
        PlanOutcome::Planned(d) => d,
        other => panic!("expected Planned, got {other:?}"),
    }
}

/// Execution `id` as the store's read returns it; `None` if it has not
/// reported.
async fn read_execution(store: &Store, id: Uuid) -> Option<Execution> {
    let found = store.executions(&[id]).await.expect("read executions");
    found.into_iter().next()
}
