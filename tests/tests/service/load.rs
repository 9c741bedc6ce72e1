//! The soak's one-minute smoke (`tests/examples/load.rs` runs it for an
//! hour): a real `serve` on the SQLite default, driven as a runtime drives
//! it through the HTTP API, sessions coming and going, arrivals open-loop.
//! Judged per execution id, not by totals: every report answered 2xx is
//! continued exactly once, and nothing offered is shed or fails.

use std::sync::Arc;
use std::time::Duration;

use nomos_continue_tests::load::{self, Agent, LoadConfig};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minute_of_a_runtimes_load_continues_each_execution_exactly_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite:{}", dir.path().join("load.db").display());
    let agent = Arc::new(Agent::default());
    let webhook = agent.serve().await.expect("agent");
    let replica = Replica::start(&ReplicaOptions::new(&url, &webhook, "load")).await;
    let pid = replica.pid().expect("pid");
    let mut config = LoadConfig::new(40.0, Duration::from_secs(60));
    config.in_flight = Some(32);
    let sample: load::Sample = Box::new(move || Box::pin(async move { (load::rss_of(pid), None) }));
    let report = load::run(&format!("http://{}", replica.addr), agent, &config, sample)
        .await
        .expect("the load runs");
    let offered: u64 = report.minutes.iter().map(|m| m.offered).sum();
    assert_eq!(offered, 2_400, "{report:#?}");
    assert!(report.errors.is_empty(), "{:#?}", report.errors);
    assert_eq!(report.taken, offered, "{report:#?}");
    assert!(
        report.never_continued.is_empty() && report.continued_twice.is_empty(),
        "never continued: {:?}; continued twice: {:?}\n{}",
        report.never_continued,
        report.continued_twice,
        replica.stderr()
    );
    assert!(report.minutes[0].rss_mib.is_some(), "{report:#?}");
    assert!(report.csv().lines().count() > 1, "{}", report.csv());
}
