//! `nomos-continue policy replay|capture`: a candidate policy tried on the
//! decisions the running system recorded (see the decision log in
//! `crate::store`), and one recorded decision turned into a golden case.
//!
//! Replay decides each recorded input again exactly as the worker would
//! (the same chunking and fault isolation) and compares the answer with
//! the recorded one. Before that it re-runs each recorded revision on a
//! sample of its own inputs: a policy that does not reproduce its own
//! answers makes every comparison meaningless, so that is reported first.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::policy::read_policy_file;
use crate::policy::types::DecisionInput;
use crate::policy::{codec, Limits, PolicyRuntime, Revision, BUILTIN_POLICY_WASM};
use crate::store::{parse_uuid, DecisionFilter, LoggedDecision, Store};
use crate::worker::{decide_chunked, logged_verdict, Verdict};

/// Recorded decisions read per query.
const PAGE: i64 = 500;

/// What `policy replay` is asked.
#[derive(Debug, Clone)]
pub struct ReplayArgs {
    /// The candidate component.
    pub candidate: PathBuf,
    /// Only decisions taken this recently.
    pub since: Option<Duration>,
    /// Only this session's decisions.
    pub session: Option<String>,
    /// The database holding the log (its servers; see `Store::connect_any`).
    pub database_url: Vec<String>,
    /// Exit 0 even when decisions changed.
    pub allow_changes: bool,
    /// Decisions per recorded revision re-run to check determinism.
    pub sample: usize,
    /// The sandbox limits the candidate and the recorded revisions run
    /// under.
    pub limits: Limits,
}

/// Decides the recorded inputs again with the candidate; prints each
/// changed decision and, last, `replayed N decisions: S same, C changed`.
/// Exits 1 when a decision changed (unless `--allow-changes`) or a
/// recorded revision did not reproduce its own answers.
pub fn replay(args: &ReplayArgs) -> Result<ExitCode> {
    let bytes = read_policy_file(&args.candidate)?;
    let candidate = PolicyRuntime::unvetted(args.limits.clone(), &bytes)
        .with_context(|| format!("load the candidate {}", args.candidate.display()))?;
    let runtime = tokio::runtime::Runtime::new().context("start the async runtime")?;
    runtime.block_on(async {
        let urls: Vec<&str> = args.database_url.iter().map(String::as_str).collect();
        let store = Store::connect_any(&urls)
            .await
            .context("connect to the database")?;
        store.migrate().await.context("migrate the database")?;
        let mut filter = DecisionFilter {
            session_id: args.session.as_deref().map(parse_uuid).transpose()?,
            ..DecisionFilter::default()
        };
        if let Some(since) = args.since {
            let since = chrono::Duration::from_std(since).context("--since is too long")?;
            filter.since = store.database_now().await?.checked_sub_signed(since);
        }
        let mut out = std::io::stdout().lock();
        let unreproduced = check_determinism(&store, filter, args, &mut out).await?;
        let tally = replay_all(&store, filter, &candidate, &mut out).await?;
        store.close().await;
        std::io::Write::flush(&mut out)?;
        println!(
            "replayed {} decisions: {} same, {} changed",
            tally.same + tally.changed,
            tally.same,
            tally.changed
        );
        let failed = unreproduced > 0 || (tally.changed > 0 && !args.allow_changes);
        Ok(if failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    })
}

/// `policy capture DECISION_ID`: writes the recorded input as
/// `decision-ID.in` and its recorded answer as `decision-ID.out` in `to`
/// (a golden `decide` folder), so `policy test` pins it from then on.
pub fn capture(database_urls: &[&str], id: i64, to: &Path) -> Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new().context("start the async runtime")?;
    let logged = runtime.block_on(async {
        let store = Store::connect_any(database_urls)
            .await
            .context("connect to the database")?;
        store.migrate().await.context("migrate the database")?;
        let logged = store.decision(id).await?;
        store.close().await;
        anyhow::Ok(logged)
    })?;
    let Some(logged) = logged else {
        bail!("no decision {id} in the log (it may have been purged)");
    };
    let d = &logged.decision;
    let input: DecisionInput = codec::decision_input(&d.input)
        .with_context(|| format!("decision {id}'s recorded input"))?;
    if is_failure(&d.output) {
        bail!(
            "decision {id}: the policy failed on this input ({}); a golden case pins an answer, \
             so write the expected .out by hand",
            d.output
        );
    }
    std::fs::create_dir_all(to).with_context(|| format!("create {}", to.display()))?;
    let stem = to.join(format!("decision-{id}"));
    let (input_path, output_path) = (stem.with_extension("in"), stem.with_extension("out"));
    let pretty = serde_json::to_string_pretty(&input).context("write the input")?;
    std::fs::write(&input_path, pretty + "\n")
        .with_context(|| format!("write {}", input_path.display()))?;
    std::fs::write(&output_path, format!("{}\n", d.output))
        .with_context(|| format!("write {}", output_path.display()))?;
    println!("wrote {}", input_path.display());
    println!("wrote {}", output_path.display());
    Ok(ExitCode::SUCCESS)
}

#[derive(Default)]
struct Tally {
    same: usize,
    changed: usize,
}

/// Every recorded decision matching `filter`, a page at a time.
async fn for_each_page<F>(store: &Store, mut filter: DecisionFilter, mut each: F) -> Result<()>
where
    F: FnMut(Vec<LoggedDecision>) -> Result<()>,
{
    loop {
        let page = store.decisions(filter, PAGE).await?;
        let Some(last) = page.last() else {
            return Ok(());
        };
        filter.after_id = last.id;
        each(page)?;
    }
}

/// Re-runs each recorded revision on up to `sample` of its inputs; prints
/// each input that does not reproduce; returns how many did not.
async fn check_determinism(
    store: &Store,
    filter: DecisionFilter,
    args: &ReplayArgs,
    out: &mut impl std::io::Write,
) -> Result<usize> {
    let sample = args.sample;
    let mut samples: HashMap<String, Vec<LoggedDecision>> = HashMap::new();
    for_each_page(store, filter, |page| {
        for d in page {
            let taken = samples.entry(d.decision.revision.clone()).or_default();
            if taken.len() < sample {
                taken.push(d);
            }
        }
        Ok(())
    })
    .await?;
    let mut revisions: Vec<_> = samples.into_iter().collect();
    revisions.sort_by(|a, b| a.0.cmp(&b.0));
    let mut unreproduced = 0;
    for (revision, decisions) in revisions {
        let Some(recorded) = recorded_revision(store, &revision, &args.limits).await? else {
            writeln!(
                out,
                "determinism: revision {} is not in the store; its {} sampled decisions were not re-run",
                short(&revision),
                decisions.len()
            )?;
            continue;
        };
        let (inputs, readable) = parse_inputs(&decisions);
        let verdicts = decide_outside_async(&recorded, &inputs);
        let mut same = 0;
        for (d, verdict) in readable.iter().zip(&verdicts) {
            let again = logged_verdict(verdict).map(|(_, o)| o).unwrap_or_default();
            if same_answer(&d.decision.output, &again) {
                same += 1;
            } else {
                unreproduced += 1;
                writeln!(
                    out,
                    "NOT REPRODUCED decision {} under its own revision {}: recorded {}, now {}",
                    d.id,
                    short(&revision),
                    d.decision.output,
                    again
                )?;
            }
        }
        writeln!(
            out,
            "determinism: revision {} reproduced {same} of {} sampled decisions",
            short(&revision),
            decisions.len()
        )?;
    }
    Ok(unreproduced)
}

/// Decides every recorded input with the candidate; prints each change.
async fn replay_all(
    store: &Store,
    filter: DecisionFilter,
    candidate: &PolicyRuntime,
    out: &mut impl std::io::Write,
) -> Result<Tally> {
    let mut tally = Tally::default();
    for_each_page(store, filter, |page| {
        let (inputs, readable) = parse_inputs(&page);
        let mut read = readable.iter().map(|d| d.id).peekable();
        for d in &page {
            // Both in id order: a decision not next in `readable` did not read.
            if read.next_if_eq(&d.id).is_none() {
                tally.changed += 1;
                writeln!(out, "decision {}: its recorded input no longer reads", d.id)?;
            }
        }
        let verdicts = decide_outside_async(candidate, &inputs);
        for (d, verdict) in readable.iter().zip(&verdicts) {
            let (revision, answer) = logged_verdict(verdict)
                .map(|(r, o)| (r.to_string(), o))
                .unwrap_or_default();
            if same_answer(&d.decision.output, &answer) {
                tally.same += 1;
            } else {
                tally.changed += 1;
                out.write_all(changed(d, &revision, &answer).as_bytes())?;
            }
        }
        Ok(())
    })
    .await?;
    Ok(tally)
}

/// Decides off the async threads: the sandbox's WASI calls block on a
/// runtime of their own (the worker runs them on the blocking pool too).
fn decide_outside_async(policy: &PolicyRuntime, inputs: &[DecisionInput]) -> Vec<Verdict> {
    tokio::task::block_in_place(|| decide_chunked(policy, inputs))
}

/// The inputs that still read, with the decisions they came from.
fn parse_inputs(decisions: &[LoggedDecision]) -> (Vec<DecisionInput>, Vec<&LoggedDecision>) {
    decisions
        .iter()
        .filter_map(|d| Some((codec::decision_input(&d.decision.input).ok()?, d)))
        .unzip()
}

/// The recorded revision's runtime: from the store, or this binary's
/// built-in policy when the store has no row for it.
async fn recorded_revision(
    store: &Store,
    hash: &str,
    limits: &Limits,
) -> Result<Option<PolicyRuntime>> {
    let bytes = match store.policy_revision_wasm(hash).await? {
        Some(bytes) => bytes,
        None if Revision::of(BUILTIN_POLICY_WASM).0 == hash => BUILTIN_POLICY_WASM.to_vec(),
        None => return Ok(None),
    };
    let runtime = PolicyRuntime::unvetted(limits.clone(), &bytes)
        .with_context(|| format!("load the recorded revision {}", short(hash)))?;
    Ok(Some(runtime))
}

/// Two logged outputs agree: the same answer, or both a failure (whose
/// wording may name timings or offsets).
fn same_answer(recorded: &str, now: &str) -> bool {
    match (parse(recorded), parse(now)) {
        (Some(a), Some(b)) => a == b || (is_failure_value(&a) && is_failure_value(&b)),
        _ => recorded == now,
    }
}

fn parse(output: &str) -> Option<Value> {
    serde_json::from_str(output).ok()
}

fn is_failure_value(v: &Value) -> bool {
    v.get("error").is_some()
}

fn is_failure(output: &str) -> bool {
    parse(output).is_some_and(|v| is_failure_value(&v))
}

/// One changed decision, readably: what flipped, and a line diff of the
/// note or reason when the kind stayed the same.
fn changed(d: &LoggedDecision, revision: &str, answer: &str) -> String {
    let logged = &d.decision;
    let mut text = String::new();
    let host = match &logged.idempotency_key {
        Some(key) => format!("{} under {key}", logged.action),
        None => logged.action.clone(),
    };
    let _ = writeln!(
        text,
        "decision {} at {} (session {}, execution {}; the host {host}):",
        d.id, d.decided_at, logged.session_id, logged.execution_id
    );
    let (old_kind, old_text) = summary(&logged.output);
    let (new_kind, new_text) = summary(answer);
    let _ = writeln!(
        text,
        "  {old_kind} -> {new_kind}   (recorded by {}, replayed by {})",
        short(&logged.revision),
        short(revision)
    );
    if old_text != new_text {
        let diff = similar::TextDiff::from_lines(&old_text, &new_text);
        for change in diff.iter_all_changes() {
            let sign = match change.tag() {
                similar::ChangeTag::Delete => "-",
                similar::ChangeTag::Insert => "+",
                similar::ChangeTag::Equal => " ",
            };
            let _ = write!(text, "  {sign} {}", change.value());
            if change.missing_newline() {
                text.push('\n');
            }
        }
    }
    text
}

/// A logged output's kind (`wait`, `continue`, `drop`, `error`) and its
/// text (the note, the reason or the error).
fn summary(output: &str) -> (String, String) {
    let Some(v) = parse(output) else {
        return ("unreadable".into(), output.to_string());
    };
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return ("error".into(), e.to_string());
    }
    let kind = v.get("decision").and_then(Value::as_str).unwrap_or("?");
    let text = ["note", "reason"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .unwrap_or_default();
    (kind.to_string(), text.to_string())
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn failures_agree_whatever_their_wording_and_answers_by_value() {
        assert!(same_answer(
            r#"{"decision":"wait"}"#,
            r#"{ "decision": "wait" }"#
        ));
        assert!(same_answer(
            &codec::failure_line("trap at 0x1"),
            &codec::failure_line("trap at 0x2")
        ));
        assert!(!same_answer(
            r#"{"decision":"wait"}"#,
            &codec::failure_line("trap")
        ));
        assert!(!same_answer(
            r#"{"decision":"continue","note":"a"}"#,
            r#"{"decision":"continue","note":"b"}"#
        ));
    }

    #[test]
    fn a_change_names_the_flip_and_diffs_the_text() {
        let d = LoggedDecision {
            id: 7,
            decided_at: chrono::DateTime::UNIX_EPOCH,
            decision: crate::store::NewDecision {
                session_id: Uuid::nil(),
                execution_id: Uuid::nil(),
                revision: "a".repeat(64),
                input: String::new(),
                output: r#"{"decision":"continue","note":"one\ntwo"}"#.into(),
                action: "continued".into(),
                idempotency_key: Some("c-1".into()),
                detail: None,
            },
        };
        let text = changed(
            &d,
            &"b".repeat(64),
            r#"{"decision":"continue","note":"one\nthree"}"#,
        );
        assert!(text.contains("continued under c-1"), "{text}");
        assert!(text.contains("continue -> continue"), "{text}");
        assert!(
            text.contains("  - two\n") && text.contains("  + three\n"),
            "{text}"
        );
        let flip = changed(&d, "b", r#"{"decision":"drop","reason":"no"}"#);
        assert!(flip.contains("continue -> drop"), "{flip}");
    }
}
