//! What an operator at 3 a.m. has to go on, held against the real binary:
//! `/metrics` of a `serve` that has done some work against
//! `docs/metrics.md` (both ways), the dashboard's queries against the
//! families served, and the alerting rules under the real `promtool`
//! (`check rules`, and `test rules` with `tests/alerts_test.yml`).
//!
//! `promtool` is Debian's `prometheus` package (`.ci/run` installs it):
//! without it the promtool parts skip, except under `CI=true`, where they
//! fail.

mod logs;
mod secrets;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use nomos_continue_tests::db::in_ci;
use nomos_continue_tests::http::{RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use nomos_continue_tests::wait::until;
use uuid::Uuid;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(relative: &str) -> String {
    let path = repo().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The families of an exposition: name → type, from its `# TYPE` lines.
fn families(exposition: &str) -> BTreeMap<String, String> {
    exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(name, kind)| (name.to_owned(), kind.to_owned()))
        .collect()
}

/// The families `docs/metrics.md`'s table documents: name → type.
fn documented() -> BTreeMap<String, String> {
    read("docs/metrics.md")
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| {
            let (name, rest) = l.split_once("` | ")?;
            let kind = rest.split(" | ").next()?;
            Some((name.to_owned(), kind.to_owned()))
        })
        .filter(|(name, _)| name.starts_with("nomos_continue_") || name.starts_with("process_"))
        .collect()
}

/// The metric names a PromQL text uses, with a histogram's series
/// suffixes mapped to its family (as `served` types it).
fn names_in(promql: &str, served: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = promql;
    while let Some(at) = rest.find("nomos_continue_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|suffix| name.strip_suffix(suffix))
            .find(|family| served.get(*family).is_some_and(|k| k == "histogram"))
            .unwrap_or(name);
        names.insert(family.to_owned());
        rest = &tail[end..];
    }
    names
}

/// `promtool`, if installed; `None` (the caller returns) outside CI when
/// it is not, a panic under `CI=true`.
fn promtool() -> Option<PathBuf> {
    let path = PathBuf::from("/usr/bin/promtool");
    if path.exists() {
        return Some(path);
    }
    if in_ci() {
        panic!("CI=true but /usr/bin/promtool is missing (Debian package prometheus)");
    }
    eprintln!("skipped: no /usr/bin/promtool (apt-get install prometheus)");
    None
}

fn run_promtool(promtool: &Path, args: &[&str]) -> String {
    let output = Command::new(promtool)
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap_or_else(|e| panic!("run promtool: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "promtool {args:?}:\n{text}");
    text
}

/// What [`scrape_after_traffic`] saw.
struct Traffic {
    /// `/metrics` once the agent call was counted.
    scrape: String,
    /// The session and the execution the traffic named.
    ids: [Uuid; 2],
}

/// A `serve` on a fresh SQLite file whose worker has continued one failed
/// execution through a webhook, and that answered one request no route
/// takes, so every histogram and labelled family has a series.
async fn scrape_after_traffic() -> Traffic {
    let (_, hook) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook server");
    let dir = tempfile::tempdir().expect("tempdir");
    let database_url = format!("sqlite:{}", dir.path().join("metrics.db").display());
    let options = ReplicaOptions::new(&database_url, &hook.url("/hook"), "metrics");
    let replica = Replica::start(&options).await;
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    replica
        .fail_in_open_window(session, execution, "disk full")
        .await;
    hook.wait_for_requests(1).await;
    let unmatched = reqwest::get(format!("http://{}/v1/no-such-route", replica.addr))
        .await
        .expect("GET an unknown route");
    assert_eq!(unmatched.status(), 404);
    let scrape = until("the agent call counted on /metrics", async || {
        let text = replica.get_text("/metrics").await;
        let counted = text.lines().any(|l| {
            l.starts_with("nomos_continue_agent_call_duration_seconds_count{")
                && l.contains(r#"kind="continuation""#)
                && l.contains(r#"result="ok""#)
                && !l.ends_with(" 0")
        });
        counted.then_some(text)
    })
    .await;
    Traffic {
        scrape,
        ids: [session, execution],
    }
}

#[tokio::test]
async fn every_served_metric_is_documented_and_every_documented_one_served() {
    let Traffic { scrape, ids } = scrape_after_traffic().await;
    let served = families(&scrape);
    let documented = documented();
    assert!(
        documented.len() >= 25,
        "the table was not read: {documented:?}"
    );
    for (name, kind) in &served {
        assert_eq!(
            documented.get(name),
            Some(kind),
            "{name} ({kind}) is served but not documented as such in docs/metrics.md"
        );
    }
    // The tables' upkeep is PostgreSQL's: on this SQLite `serve` its
    // families have no series, and the test below checks them on
    // PostgreSQL.
    for (name, kind) in documented.iter().filter(|(n, _)| !n.starts_with(DB_TABLE)) {
        assert_eq!(
            served.get(name),
            Some(kind),
            "{name} is documented as a {kind} but not served:\n{scrape}"
        );
    }
    // What the traffic must have shown: the route template, not the path,
    // and the unmatched request under its own label.
    let requests: Vec<&str> = scrape
        .lines()
        .filter(|l| l.starts_with("nomos_continue_http_requests_total{"))
        .collect();
    assert!(
        requests
            .iter()
            .any(|l| l.contains(r#"route="/v1/sessions/{session_id}/tool-results""#)),
        "{requests:#?}"
    );
    assert!(
        requests
            .iter()
            .any(|l| l.contains(r#"route="unmatched""#) && l.contains(r#"status="404""#)),
        "{requests:#?}"
    );
    for id in ids {
        assert!(
            !scrape.contains(&id.to_string()),
            "{id} in a label:\n{scrape}"
        );
    }
    assert!(
        scrape.contains(r#"nomos_continue_db_pool_max_connections{pool="worker"}"#),
        "{scrape}"
    );
}

#[tokio::test]
async fn the_dashboard_queries_only_served_metrics() {
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("docs/grafana-dashboard.json")).expect("dashboard JSON");
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_owned))
        .collect();
    assert!(exprs.len() >= 12, "{exprs:?}");
    let served = families(&scrape_after_traffic().await.scrape);
    let used: BTreeSet<String> = exprs.iter().flat_map(|e| names_in(e, &served)).collect();
    for wanted in [
        "nomos_continue_backlog_oldest_age_seconds",
        "nomos_continue_deliveries_total",
        "nomos_continue_pickup_latency_seconds",
        "nomos_continue_agent_call_duration_seconds",
        "nomos_continue_http_requests_total",
        "nomos_continue_db_pool_connections",
        "nomos_continue_notices_undelivered",
        "nomos_continue_stuck_executions",
    ] {
        assert!(used.contains(wanted), "no panel shows {wanted}: {used:?}");
    }
    for name in &used {
        assert!(
            served.contains_key(name),
            "the dashboard queries {name}, which /metrics does not serve"
        );
    }
    // Every query parses as PromQL: promtool checks them as recording rules.
    let Some(promtool) = promtool() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = exprs
        .iter()
        .enumerate()
        .map(|(n, e)| {
            let e = e.replace("$__rate_interval", "5m");
            format!(
                "      - record: dashboard:query{n}\n        expr: {}\n",
                serde_json::json!(e)
            )
        })
        .collect::<String>();
    let file = dir.path().join("dashboard-rules.yml");
    std::fs::write(
        &file,
        format!("groups:\n  - name: dashboard\n    rules:\n{rules}"),
    )
    .expect("write rules");
    let checked = run_promtool(&promtool, &["check", "rules", &file.display().to_string()]);
    assert!(checked.contains("SUCCESS"), "{checked}");
}

#[test]
fn the_alerting_rules_pass_promtool_and_their_tests() {
    let rules = read("docs/alerts.yml");
    let documented = documented();
    for name in names_in(&rules, &documented) {
        assert!(
            documented.contains_key(&name),
            "docs/alerts.yml uses {name}, which docs/metrics.md does not document"
        );
    }
    for alert in [
        "NomosContinueBacklogStale",
        "NomosContinueDeliveriesFailed",
        "NomosContinueNoticesUndelivered",
        "NomosContinueStuckExecutions",
        "NomosContinuePolicyFallback",
        "NomosContinueAutovacuumOff",
        "NomosContinueTableBloated",
        "NomosContinueTableNotVacuumed",
    ] {
        assert!(
            rules.contains(&format!("alert: {alert}")),
            "{alert} missing"
        );
    }
    let Some(promtool) = promtool() else { return };
    let checked = run_promtool(&promtool, &["check", "rules", "docs/alerts.yml"]);
    assert!(checked.contains("SUCCESS: 8 rules found"), "{checked}");
    let tested = run_promtool(&promtool, &["test", "rules", "tests/alerts_test.yml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");
}

/// The prefix of the families of PostgreSQL's upkeep of each table.
const DB_TABLE: &str = "nomos_continue_db_table_";

/// On PostgreSQL, `serve` says at start when autovacuum cannot run (this
/// machine's shared server has it off, a CI setting; a developer's may
/// not: the test follows the server's own `SHOW`), and `/metrics` shows
/// each table's upkeep, agreeing with that setting.
#[tokio::test]
async fn on_postgresql_serve_warns_when_vacuum_is_off_and_shows_each_tables_upkeep() {
    let Some(db) = nomos_continue_tests::db::fresh_postgres_db().await else {
        return;
    };
    let mut conn: sqlx::PgConnection = sqlx::Connection::connect(&db.url).await.expect("connect");
    let autovacuum: String = sqlx::query_scalar("SHOW autovacuum")
        .fetch_one(&mut conn)
        .await
        .expect("SHOW autovacuum");
    drop(conn);
    let (_, hook) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .expect("webhook server");
    let options = ReplicaOptions::new(&db.url, &hook.url("/hook"), "upkeep");
    let replica = Replica::start(&options).await;
    let scrape = replica.get_text("/metrics").await;
    let warned = replica
        .stderr()
        .contains("PostgreSQL will not vacuum this store's tables: autovacuum = off");
    assert_eq!(warned, autovacuum == "off", "{}", replica.stderr());
    let enabled = u8::from(autovacuum == "on");
    for line in [
        format!(
            r#"nomos_continue_db_table_autovacuum_enabled{{table="nomos_deliveries"}} {enabled}"#
        ),
        format!(
            r#"nomos_continue_db_table_autovacuum_enabled{{table="nomos_plan_executions"}} {enabled}"#
        ),
    ] {
        assert!(scrape.lines().any(|l| l == line), "no {line}:\n{scrape}");
    }
    // Every documented family of the tables' upkeep is served, as the type
    // documented, with a series for each hot table.
    let served = families(&scrape);
    let upkeep: Vec<(String, String)> = documented()
        .into_iter()
        .filter(|(name, _)| name.starts_with(DB_TABLE))
        .collect();
    assert_eq!(upkeep.len(), 7, "{upkeep:?}");
    for (family, kind) in upkeep {
        assert_eq!(served.get(&family), Some(&kind), "{family}:\n{scrape}");
        let series = format!(r#"{family}{{table="nomos_assent_windows"}} "#);
        assert!(scrape.contains(&series), "no {series}:\n{scrape}");
    }
    drop(replica);
    db.cleanup().await;
}
