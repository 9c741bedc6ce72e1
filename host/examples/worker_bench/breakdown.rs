//! Where a pickup's time goes (`latency --breakdown`): every statement the
//! process runs is timed by sqlx's own statement log (the `sqlx::query`
//! events, with each statement's text and elapsed time); each is stamped
//! when it ends, so one sample's statements between the status write and
//! the agent call are a timeline, and what lies between them is the
//! worker's own work (waking, the policy, building the call).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// One statement: when it ended, its text (whitespace folded), how long
/// the driver says it took.
#[derive(Clone, Debug)]
struct Statement {
    ended: Instant,
    sql: String,
    elapsed_ms: f64,
}

/// The statements recorded since the last [`Recorder::take`].
#[derive(Clone, Default)]
pub struct Recorder {
    seen: Arc<Mutex<Vec<Statement>>>,
}

/// Collects one event's statement text and elapsed seconds.
#[derive(Default)]
struct Fields {
    sql: Option<String>,
    summary: Option<String>,
    elapsed_secs: Option<f64>,
}

impl Visit for Fields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        if field.name() == "elapsed_secs" {
            self.elapsed_secs = Some(value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "db.statement" if !value.is_empty() => self.sql = Some(value.to_owned()),
            "summary" => self.summary = Some(value.to_owned()),
            _ => {}
        }
    }

    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

impl<S: tracing::Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &tracing::Event<'_>, _cx: Context<'_, S>) {
        if event.metadata().target() != "sqlx::query" {
            return;
        }
        let ended = Instant::now();
        let mut fields = Fields::default();
        event.record(&mut fields);
        let Some(elapsed) = fields.elapsed_secs else {
            return;
        };
        let text = fields.sql.or(fields.summary).unwrap_or_default();
        let sql = text.split_whitespace().collect::<Vec<_>>().join(" ");
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Statement {
                ended,
                sql,
                elapsed_ms: elapsed * 1e3,
            });
    }
}

impl Recorder {
    /// Installs the recorder as the process's subscriber, with sqlx's
    /// statement events (debug level) enabled and nothing else.
    pub fn install() -> Self {
        let recorder = Self::default();
        let only_statements = tracing_subscriber::filter::Targets::new()
            .with_target("sqlx::query", tracing::Level::DEBUG);
        tracing_subscriber::registry()
            .with(recorder.clone().with_filter(only_statements))
            .init();
        recorder
    }

    /// Forgets what was recorded.
    pub fn clear(&self) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The statements that ended within (`start`, `end`], as steps of one
    /// pickup, and forgets everything recorded.
    pub fn take(&self, start: Instant, end: Instant) -> Vec<Step> {
        let seen = std::mem::take(&mut *self.seen.lock().unwrap_or_else(PoisonError::into_inner));
        let mut steps = Vec::new();
        let mut at = start;
        for s in seen
            .into_iter()
            .filter(|s| s.ended > start && s.ended <= end)
        {
            let began = s.ended - std::time::Duration::from_secs_f64(s.elapsed_ms / 1e3);
            let gap_ms = began.saturating_duration_since(at).as_secs_f64() * 1e3;
            at = at.max(s.ended);
            steps.push(Step {
                sql: s.sql,
                began_ms: began.saturating_duration_since(start).as_secs_f64() * 1e3,
                ms: s.elapsed_ms,
                gap_ms,
            });
        }
        let tail = end.saturating_duration_since(at).as_secs_f64() * 1e3;
        steps.push(Step {
            sql: "(after the last statement, until the agent call)".into(),
            began_ms: end.saturating_duration_since(start).as_secs_f64() * 1e3,
            ms: 0.0,
            gap_ms: tail,
        });
        steps
    }
}

/// A statement of one pickup, and the time since the one before it ended
/// (or since the sample's start) during which no statement ran (statements
/// run at once overlap: their gaps are zero).
#[derive(Clone, Debug)]
pub struct Step {
    sql: String,
    began_ms: f64,
    ms: f64,
    gap_ms: f64,
}

/// The mean per sample of each statement (the statements in the order they
/// first appear), each statement's share of the total, and the time
/// outside statements. `width` is how much of each statement is shown.
pub fn report(samples: &[Vec<Step>], width: usize) -> String {
    let mut order: Vec<String> = Vec::new();
    let mut times: BTreeMap<String, (Vec<f64>, Vec<f64>, usize)> = BTreeMap::new();
    for sample in samples {
        let mut seen_here: BTreeMap<&str, (f64, f64, usize)> = BTreeMap::new();
        for step in sample {
            let key: String = step.sql.chars().take(width).collect();
            if !order.contains(&key) {
                order.push(key.clone());
            }
            let e = seen_here.entry(&step.sql).or_default();
            e.0 += step.ms;
            e.1 += step.gap_ms;
            e.2 += 1;
        }
        for (sql, (ms, gap, runs)) in seen_here {
            let key: String = sql.chars().take(width).collect();
            let e = times.entry(key).or_default();
            e.0.push(ms);
            e.1.push(gap);
            e.2 += runs;
        }
    }
    let n = samples.len().max(1) as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>7} {:>9} {:>9}  statement (per sample, in the order first run: times run, ms in it, ms before it when none ran)",
        "runs", "ms", "gap ms"
    );
    let (mut total_stmt, mut total_gap) = (0.0, 0.0);
    for key in &order {
        let Some((ms, gaps, runs)) = times.get(key) else {
            continue;
        };
        let mean_ms = ms.iter().sum::<f64>() / n;
        let mean_gap = gaps.iter().sum::<f64>() / n;
        total_stmt += mean_ms;
        total_gap += mean_gap;
        let _ = writeln!(
            out,
            "{:>7.2} {:>9.3} {:>9.3}  {key}",
            *runs as f64 / n,
            mean_ms,
            mean_gap,
        );
    }
    let _ = writeln!(
        out,
        "per sample: {total_stmt:.3} ms in statements, {total_gap:.3} ms between them"
    );
    out
}

/// One sample's statements in the order they ran: when each began (ms
/// after the status write began) and how long it took.
pub fn timeline(sample: &[Step], width: usize) -> String {
    let mut out = String::new();
    for step in sample {
        let sql: String = step.sql.chars().take(width).collect();
        let _ = writeln!(out, "{:>8.3} {:>7.3}  {sql}", step.began_ms, step.ms);
    }
    out
}
