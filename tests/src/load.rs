//! A runtime's load on a real `serve`, through its HTTP API only, for the
//! soak (`tests/examples/load.rs`) and its one-minute smoke in CI.
//!
//! The runtime's shape: sessions come and go. Each session is approved
//! once (its window is left to expire), then posts tool results that each
//! name one new execution and reports each `completed`; after
//! [`LoadConfig::per_session`] executions the next report starts a new
//! session. Arrivals are open-loop: report `i` is due at `i / rate`
//! seconds whatever the answers before it did, so a slow `serve` meets a
//! growing queue, as it would beside a real runtime. The runtime holds at
//! most [`LoadConfig::in_flight`] reports in flight (or any number), keeps
//! at most [`LoadConfig::queue`] waiting and sheds the rest, and retries a
//! `503` or `429` after its `Retry-After`.
//!
//! A no-op agent webhook records when each execution was continued and how
//! often; the result is judged per execution id: every report answered 2xx
//! must be continued exactly once. Per minute it records the rate offered,
//! taken and shed, the `503`s, the continuations, the pickup lag (report
//! sent → continuation received) p50/p99, `serve`'s resident set and the
//! database's bytes.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::sync::{OnceCell, Semaphore};
use uuid::Uuid;

/// How the runtime drives `serve`.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Reports offered per second.
    pub rate: f64,
    /// How long reports are offered at `rate`.
    pub duration: Duration,
    /// Further phases after the first, each `(how long, reports a
    /// second)`: an overload and the fall back to the soak's rate.
    pub then: Vec<(Duration, f64)>,
    /// Executions per session before the next session starts.
    pub per_session: usize,
    /// Reports in flight at most; `None`: no bound.
    pub in_flight: Option<usize>,
    /// Reports waiting for a slot at most; beyond, an arrival is shed.
    pub queue: usize,
    /// How long to wait, after the last report, for its continuation.
    pub drain: Duration,
}

impl LoadConfig {
    /// `rate` reports a second for `duration`, ten executions a session,
    /// 256 in flight, 50,000 waiting, a minute to drain.
    pub fn new(rate: f64, duration: Duration) -> Self {
        LoadConfig {
            rate,
            duration,
            then: Vec::new(),
            per_session: 10,
            in_flight: Some(256),
            queue: 50_000,
            drain: Duration::from_secs(60),
        }
    }

    /// Every phase, the first included, as `(how long, reports a second)`.
    fn phases(&self) -> impl Iterator<Item = (Duration, f64)> + '_ {
        std::iter::once((self.duration, self.rate)).chain(self.then.iter().copied())
    }

    /// How long reports are offered, over every phase.
    pub fn offered_for(&self) -> Duration {
        self.phases().map(|(d, _)| d).sum()
    }

    /// When each report comes due, from the start: open loop, phase after
    /// phase.
    fn due_times(&self) -> Vec<Duration> {
        let mut due = Vec::new();
        let mut start = Duration::ZERO;
        for (duration, rate) in self.phases() {
            let n = (rate * duration.as_secs_f64()) as usize;
            due.extend((0..n).map(|i| start + Duration::from_secs_f64(i as f64 / rate)));
            start += duration;
        }
        due
    }
}

/// One minute of the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Minute {
    /// Reports that came due.
    pub offered: u64,
    /// Reports answered 2xx.
    pub taken: u64,
    /// Reports the runtime dropped because its queue was full.
    pub shed: u64,
    /// Answers `503` or `429` (each retried).
    pub refused: u64,
    /// Executions continued (first time).
    pub continued: u64,
    /// How long `serve` took to answer a request (a refusal included),
    /// p99, ms: what a runtime waits on each call.
    pub answer_p99_ms: Option<f64>,
    /// Pickup lag, report sent → continuation received: p50 and p99, ms.
    pub lag_ms: Option<(f64, f64)>,
    /// `serve`'s largest resident set in the minute, MiB.
    pub rss_mib: Option<f64>,
    /// The database's bytes at the minute's last sample.
    pub db_bytes: Option<u64>,
}

impl Minute {
    /// The minute's figures as text, in the CSV's column order after
    /// `minute` (an unknown figure empty).
    pub fn cells(&self) -> [String; 10] {
        let opt = |v: Option<String>| v.unwrap_or_default();
        [
            self.offered.to_string(),
            self.taken.to_string(),
            self.shed.to_string(),
            self.refused.to_string(),
            self.continued.to_string(),
            opt(self.lag_ms.map(|l| format!("{:.1}", l.0))),
            opt(self.lag_ms.map(|l| format!("{:.1}", l.1))),
            opt(self.rss_mib.map(|r| format!("{r:.1}"))),
            opt(self.db_bytes.map(|b| format!("{:.1}", b as f64 / 1e6))),
            opt(self.answer_p99_ms.map(|a| format!("{a:.1}"))),
        ]
    }
}

/// What a run saw.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Minute by minute, from the first report on.
    pub minutes: Vec<Minute>,
    /// Reports answered 2xx.
    pub taken: u64,
    /// Of those, executions never continued.
    pub never_continued: Vec<Uuid>,
    /// Executions continued more than once (any, answered 2xx or not).
    pub continued_twice: Vec<Uuid>,
    /// Requests that failed other than with `503`/`429`: the first few.
    pub errors: Vec<String>,
}

impl LoadReport {
    /// Whether every execution answered 2xx was continued exactly once.
    pub fn exactly_once(&self) -> bool {
        self.never_continued.is_empty() && self.continued_twice.is_empty()
    }

    /// The minutes as CSV, a header line first.
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "minute,offered,taken,shed,refused,continued,lag_p50_ms,lag_p99_ms,rss_mib,db_mb,answer_p99_ms\n",
        );
        for (i, m) in self.minutes.iter().enumerate() {
            let _ = writeln!(out, "{},{}", i + 1, m.cells().join(","));
        }
        out
    }
}

/// What the sampler reads every few seconds: `serve`'s resident set and
/// the database's bytes (either may be unknown).
pub type Sample =
    Box<dyn Fn() -> Pin<Box<dyn Future<Output = (Option<u64>, Option<u64>)> + Send>> + Send + Sync>;

/// The no-op agent: answers every webhook 200 and records each execution
/// a continuation carries.
#[derive(Default)]
pub struct Agent {
    seen: Mutex<HashMap<Uuid, (u32, Instant)>>,
}

impl Agent {
    /// Serves the agent on a free loopback port; returns its webhook URL.
    pub async fn serve(self: &Arc<Self>) -> Result<String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        let app = Router::new()
            .route("/hook", post(hook))
            .with_state(self.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(url)
    }

    fn record(&self, ids: impl Iterator<Item = Uuid>) {
        let now = Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        for id in ids {
            seen.entry(id).or_insert((0, now)).0 += 1;
        }
    }

    fn len(&self) -> usize {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

async fn hook(State(agent): State<Arc<Agent>>, Json(body): Json<Value>) -> StatusCode {
    if body["type"] == "continuation.v1" {
        let ids = body["data"]["executions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["id"].as_str()?.parse().ok());
        agent.record(ids);
    }
    StatusCode::OK
}

/// Counters per minute, written by the requests as they go.
struct Tally {
    started: Instant,
    offered: Vec<AtomicU64>,
    taken: Vec<AtomicU64>,
    shed: Vec<AtomicU64>,
    refused: Vec<AtomicU64>,
    /// Each request's answer time, ms, by the minute it was answered.
    answers: Vec<Mutex<Vec<f64>>>,
}

impl Tally {
    fn new(started: Instant, minutes: usize) -> Self {
        let row = || (0..minutes).map(|_| AtomicU64::new(0)).collect();
        Tally {
            started,
            offered: row(),
            taken: row(),
            shed: row(),
            refused: row(),
            answers: (0..minutes).map(|_| Mutex::new(Vec::new())).collect(),
        }
    }

    fn answered(&self, sent: Instant) {
        let now = Instant::now();
        self.answers[self.minute(now)]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(now.saturating_duration_since(sent).as_secs_f64() * 1e3);
    }

    fn minute(&self, at: Instant) -> usize {
        let m = (at.saturating_duration_since(self.started).as_secs() / 60) as usize;
        m.min(self.offered.len() - 1)
    }

    fn count(&self, row: &[AtomicU64], at: Instant) {
        row[self.minute(at)].fetch_add(1, Ordering::Relaxed);
    }
}

/// The runtime's side of the load.
struct Runtime {
    client: reqwest::Client,
    base: String,
    tally: Tally,
    /// Each session's approval, made once by its first report.
    approvals: Mutex<HashMap<usize, Arc<OnceCell<()>>>>,
    /// When each report answered 2xx was sent.
    reported: Mutex<HashMap<Uuid, Instant>>,
    errors: Mutex<Vec<String>>,
}

impl Runtime {
    /// Sends one request, again after `Retry-After` while it is refused
    /// (`503`, `429`); an error for any other failure.
    async fn send(&self, method: reqwest::Method, path: &str, body: Value) -> Result<()> {
        for _ in 0..1_000 {
            let sent = Instant::now();
            let answer = self
                .client
                .request(method.clone(), format!("{}{path}", self.base))
                .json(&body)
                .send()
                .await
                .with_context(|| format!("{method} {path}"))?;
            self.tally.answered(sent);
            let status = answer.status();
            if status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS
            {
                self.tally.count(&self.tally.refused, Instant::now());
                let wait = answer
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok()?.parse::<f64>().ok())
                    .unwrap_or(1.0);
                tokio::time::sleep(Duration::from_secs_f64(wait)).await;
                continue;
            }
            if !status.is_success() {
                bail!(
                    "{method} {path}: {status}: {}",
                    answer.text().await.unwrap_or_default()
                );
            }
            return Ok(());
        }
        bail!("{method} {path}: refused a thousand times")
    }

    async fn approve_once(&self, session_index: usize, session: Uuid) -> Result<()> {
        let cell = self
            .approvals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(session_index)
            .or_default()
            .clone();
        cell.get_or_try_init(|| async {
            let path = format!("/v1/sessions/{session}/approvals");
            self.send(
                reqwest::Method::POST,
                &path,
                json!({"decision": "approve", "route": "button"}),
            )
            .await
        })
        .await?;
        Ok(())
    }

    /// One report: the session's approval (its first report), the tool
    /// result naming a new execution, its terminal status.
    async fn report(&self, session_index: usize, session: Uuid) -> Result<()> {
        self.approve_once(session_index, session).await?;
        let execution = Uuid::new_v4();
        self.send(
            reqwest::Method::POST,
            &format!("/v1/sessions/{session}/tool-results"),
            json!({"text": format!("running, execution {execution}")}),
        )
        .await?;
        let sent = Instant::now();
        self.send(
            reqwest::Method::PUT,
            &format!("/v1/executions/{execution}"),
            json!({"status": "completed", "result": "ok"}),
        )
        .await?;
        self.tally.count(&self.tally.taken, Instant::now());
        self.reported
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(execution, sent);
        Ok(())
    }
}

/// Drives `serve` at `base` (its API's root URL) as `config` says, with
/// `agent` as its webhook, sampling with `sample` every 5 s.
pub async fn run(
    base: &str,
    agent: Arc<Agent>,
    config: &LoadConfig,
    sample: Sample,
) -> Result<LoadReport> {
    let started = Instant::now();
    let minutes = (config.offered_for() + config.drain)
        .as_secs()
        .div_ceil(60)
        .max(1) as usize
        + 1;
    let runtime = Arc::new(Runtime {
        client: reqwest::Client::builder()
            .pool_max_idle_per_host(config.in_flight.unwrap_or(1024))
            .build()?,
        base: base.trim_end_matches('/').to_owned(),
        tally: Tally::new(started, minutes),
        approvals: Mutex::new(HashMap::new()),
        reported: Mutex::new(HashMap::new()),
        errors: Mutex::new(Vec::new()),
    });
    let samples = Arc::new(Mutex::new(Vec::<(Instant, Option<u64>, Option<u64>)>::new()));
    let sampler = {
        let samples = samples.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(5));
            loop {
                every.tick().await;
                let (rss, bytes) = sample().await;
                samples
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((Instant::now(), rss, bytes));
            }
        })
    };
    let slots = config.in_flight.map(|n| Arc::new(Semaphore::new(n)));
    let waiting = Arc::new(AtomicU64::new(0));
    let mut requests = tokio::task::JoinSet::new();
    let due_times = config.due_times();
    let total = due_times.len();
    let session_id: Vec<Uuid> = (0..total.div_ceil(config.per_session.max(1)))
        .map(|_| Uuid::new_v4())
        .collect();
    for (i, after) in due_times.into_iter().enumerate() {
        let due = started + after;
        tokio::time::sleep_until(due.into()).await;
        runtime.tally.count(&runtime.tally.offered, due);
        if waiting.load(Ordering::Relaxed) >= config.queue as u64 {
            runtime.tally.count(&runtime.tally.shed, due);
            continue;
        }
        let index = i / config.per_session.max(1);
        let (runtime, slots, waiting) = (runtime.clone(), slots.clone(), waiting.clone());
        let session = session_id[index];
        waiting.fetch_add(1, Ordering::Relaxed);
        requests.spawn(async move {
            let _slot = match &slots {
                Some(s) => s.clone().acquire_owned().await.ok(),
                None => None,
            };
            waiting.fetch_sub(1, Ordering::Relaxed);
            if let Err(e) = runtime.report(index, session).await {
                let mut errors = runtime
                    .errors
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if errors.len() < 10 {
                    errors.push(format!("{e:#}"));
                }
            }
        });
        while requests.try_join_next().is_some() {}
    }
    while requests.join_next().await.is_some() {}
    let deadline = Instant::now() + config.drain;
    let taken = runtime
        .reported
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .len();
    while agent.len() < taken && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    sampler.abort();
    let samples = samples
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    Ok(judge(&runtime, &agent, &samples, minutes))
}

/// Puts the run's records together, minute by minute and per execution.
fn judge(
    runtime: &Runtime,
    agent: &Agent,
    samples: &[(Instant, Option<u64>, Option<u64>)],
    minutes: usize,
) -> LoadReport {
    let tally = &runtime.tally;
    let reported = runtime
        .reported
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let seen = agent.seen.lock().unwrap_or_else(PoisonError::into_inner);
    let mut lags: Vec<Vec<f64>> = vec![Vec::new(); minutes];
    let mut report = LoadReport {
        taken: reported.len() as u64,
        errors: runtime
            .errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone(),
        ..LoadReport::default()
    };
    for (id, (count, at)) in seen.iter() {
        if *count > 1 {
            report.continued_twice.push(*id);
        }
        if let Some(sent) = reported.get(id) {
            lags[tally.minute(*at)].push(at.saturating_duration_since(*sent).as_secs_f64() * 1e3);
        }
    }
    report.never_continued = reported
        .keys()
        .filter(|id| !seen.contains_key(id))
        .copied()
        .collect();
    let load = |row: &[AtomicU64], m: usize| row[m].load(Ordering::Relaxed);
    let last = (0..minutes)
        .rev()
        .find(|&m| load(&tally.offered, m) + load(&tally.taken, m) + lags[m].len() as u64 > 0)
        .map_or(0, |m| m + 1);
    for (m, lag) in lags.iter_mut().enumerate().take(last) {
        let inside: Vec<_> = samples.iter().filter(|s| tally.minute(s.0) == m).collect();
        report.minutes.push(Minute {
            offered: load(&tally.offered, m),
            taken: load(&tally.taken, m),
            shed: load(&tally.shed, m),
            refused: load(&tally.refused, m),
            continued: lag.len() as u64,
            lag_ms: percentiles(lag),
            answer_p99_ms: percentiles(
                &mut tally.answers[m]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            )
            .map(|p| p.1),
            rss_mib: inside
                .iter()
                .filter_map(|s| s.1)
                .max()
                .map(|b| b as f64 / 1048576.0),
            db_bytes: inside.iter().rev().find_map(|s| s.2),
        });
    }
    report
}

/// p50 and p99 of `values` (sorted here); `None` when empty.
fn percentiles(values: &mut [f64]) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    Some((at(0.5), at(0.99)))
}

/// `pid`'s resident set in bytes (`VmRSS`), if it runs.
pub fn rss_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{percentiles, LoadConfig};

    #[test]
    fn percentiles_of_a_hundred() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentiles(&mut v), Some((51.0, 99.0)));
        assert_eq!(percentiles(&mut []), None);
    }

    #[test]
    fn phases_come_due_one_after_another() {
        let mut config = LoadConfig::new(2.0, Duration::from_secs(2));
        config.then.push((Duration::from_secs(1), 4.0));
        let due: Vec<f64> = config
            .due_times()
            .iter()
            .map(Duration::as_secs_f64)
            .collect();
        assert_eq!(due, [0.0, 0.5, 1.0, 1.5, 2.0, 2.25, 2.5, 2.75]);
        assert_eq!(config.offered_for(), Duration::from_secs(3));
    }
}
