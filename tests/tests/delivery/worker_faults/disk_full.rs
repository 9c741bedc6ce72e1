//! The database's disk full (issue 28): every write of the engine fails
//! with PostgreSQL's own disk-full error (SQLSTATE 53100), reads still
//! work. `serve` must delay the work (P6), answer the runtime's writes 503
//! with `Retry-After` within the API's bound, log the failure once when it
//! starts and once when it ends (not per pass or per row), and, once space
//! is back, continue every execution exactly once per key.
//!
//! How the disk is filled: by a trigger on every table of the schema that
//! raises `disk_full` on each insert and update (`FILL` below), not by a
//! small filesystem. This sandbox does allow a tmpfs mount, but a full
//! tablespace fails only the writes that must extend a file: a write that
//! fits in a page's free space succeeds, so which of the engine's writes
//! fail would depend on page fill, not on the test; and CI need not run as
//! root. The trigger fails every write, deterministically, with the error
//! PostgreSQL gives. The runtime's own connection (`application_name =
//! runtime`) is spared, as if its tables were on another disk, so it can
//! report what finished while the engine cannot write.

use nomos_continue::store::Store;
use nomos_continue_tests::http::{RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use nomos_continue_tests::wait::until;
use uuid::Uuid;

use super::outage::{
    everything_completes, request_paths_answer_503, runtime_reports, the_worker_logged_one_episode,
};
use super::{database, Work, SERIAL};

/// Fills the disk: every insert and update fails with SQLSTATE 53100,
/// except the runtime's.
const FILL: &str = r#"
CREATE FUNCTION nomos_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF current_setting('application_name') = 'runtime' THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'could not extend file "%": No space left on device', TG_TABLE_NAME
    USING ERRCODE = 'disk_full', HINT = 'Check free disk space.';
END $f$;
DO $d$ DECLARE t record; BEGIN
  FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = current_schema() AND c.relkind = 'r' LOOP
    EXECUTE format('CREATE TRIGGER nomos_test_disk_full BEFORE INSERT OR UPDATE ON %I '
                   'FOR EACH ROW EXECUTE FUNCTION nomos_test_disk_full()', t.relname);
  END LOOP;
END $d$;
"#;

/// Space is back.
const FREE: &str = "DROP FUNCTION nomos_test_disk_full() CASCADE";

/// Failed passes the worker must have made before space comes back: the
/// log must show one episode for all of them.
const FAILED_PASSES: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_delays_the_work_answers_503_at_once_and_logs_once() {
    let _serial = SERIAL.lock().await;
    let Some(db) = database().await else { return };
    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook");
    let mut options = ReplicaOptions::new(&db.url, &server.url("/hook"), "w1");
    // Each failed try is logged at debug (the test counts them); an
    // operator at warn sees the episode's start and end.
    options.env.push((
        "NOMOS_CONTINUE_LOG".into(),
        "warn,nomos_continue::store::episode=debug".into(),
    ));
    let replica = Replica::start(&options).await;
    let work = Work::create(&[&replica], 3, 2).await;
    let runtime = Store::connect(&format!("{}?application_name=runtime", db.url))
        .await
        .expect("the runtime's connection");

    db.store.execute_raw(FILL).await.expect("fill the disk");
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    let times = request_paths_answer_503(&replica, session, execution).await;
    println!("disk full: 503 answer times {times:?}");
    runtime_reports(&runtime, &work).await;
    until("the worker to fail passes on the full disk", || async {
        let failed = replica.stderr().matches("worker pass failed again").count();
        (failed >= FAILED_PASSES).then_some(())
    })
    .await;
    assert!(
        server.requests().is_empty(),
        "a continuation went out while nothing could be recorded"
    );

    db.store.execute_raw(FREE).await.expect("free the disk");
    let probe = (session, execution);
    everything_completes(&replica, &db.store, work, probe, || server.requests()).await;

    let stderr = replica.stderr();
    assert!(
        stderr.contains("No space left on device"),
        "the cause is not in the log:\n{stderr}"
    );
    the_worker_logged_one_episode(&replica).await;
    runtime.close().await;
    drop(replica);
    db.cleanup().await;
}
