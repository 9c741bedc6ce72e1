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
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::policy::read_policy_file;
use crate::policy::types::DecisionInput;
use crate::policy::{codec, Limits, PolicyRuntime, Revision, BUILTIN_POLICY_WASM};
use crate::store::{parse_uuid, DecisionFilter, LoggedDecision, Recorded, Store};
use crate::worker::{
    decide_chunked, log_hash, logged_verdict, recorded_inputs, Unreadable, Verdict,
};

mod answers;

use answers::{agrees, changed, is_failure, recorded_text, short};

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
        let store = Store::open_to_read(&urls)
            .await
            .context("open the database to read it")?;
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
        let tally = replay_all(&store, filter, &candidate, &args.limits, &mut out).await?;
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
    let (input, output) = runtime.block_on(async {
        let store = Store::open_to_read(database_urls)
            .await
            .context("open the database to read it")?;
        let recorded = recorded_case(&store, id).await;
        store.close().await;
        recorded
    })?;
    std::fs::create_dir_all(to).with_context(|| format!("create {}", to.display()))?;
    let stem = to.join(format!("decision-{id}"));
    let (input_path, output_path) = (stem.with_extension("in"), stem.with_extension("out"));
    let pretty = serde_json::to_string_pretty(&input).context("write the input")?;
    std::fs::write(&input_path, pretty + "\n")
        .with_context(|| format!("write {}", input_path.display()))?;
    std::fs::write(&output_path, format!("{output}\n"))
        .with_context(|| format!("write {}", output_path.display()))?;
    println!("wrote {}", input_path.display());
    println!("wrote {}", output_path.display());
    Ok(ExitCode::SUCCESS)
}

/// Decision `id`'s input and its answer line, for a golden case. A compact
/// row's answer is its recorded revision's answer again, checked against
/// the recorded hash.
async fn recorded_case(store: &Store, id: i64) -> Result<(DecisionInput, String)> {
    let Some(logged) = store.decision(id).await? else {
        bail!("no decision {id} in the log (it may have been purged)");
    };
    let mut inputs = recorded_inputs(store, std::slice::from_ref(&logged)).await?;
    let input = (inputs.pop())
        .context("no input")?
        .map_err(|why| anyhow::anyhow!("decision {id}: {why}"))?;
    let d = &logged.decision;
    let output = match &d.recorded {
        Recorded::Whole { output, .. } => output.clone(),
        Recorded::Compact { answer, .. } if answer == "error" => {
            codec::failure_line(d.detail.as_deref().unwrap_or("the policy failed"))
        }
        Recorded::Compact { answer_hash, .. } => {
            let Some(policy) = recorded_revision(store, &d.revision, &Limits::default()).await?
            else {
                bail!(
                    "decision {id}: its revision {} is not in the store, and its answer is \
                     what that revision answers",
                    short(&d.revision)
                );
            };
            let verdicts = decide_outside_async(&policy, std::slice::from_ref(&input));
            let again = verdicts.first().and_then(logged_verdict).map(|(_, o)| o);
            match again {
                Some(line) if log_hash(&line) == *answer_hash => line,
                _ => bail!(
                    "decision {id}: its revision {} does not answer as recorded",
                    short(&d.revision)
                ),
            }
        }
    };
    if is_failure(&output) {
        bail!(
            "decision {id}: the policy failed on this input ({output}); a golden case pins an \
             answer, so write the expected .out by hand"
        );
    }
    Ok((input, output))
}

#[derive(Default)]
struct Tally {
    same: usize,
    changed: usize,
}

/// A page of recorded decisions with their inputs.
type Page = Vec<(LoggedDecision, Result<DecisionInput, Unreadable>)>;

/// The next page of decisions matching `filter` (which it moves on), with
/// their inputs; `None` after the last.
async fn next_page(store: &Store, filter: &mut DecisionFilter) -> Result<Option<Page>> {
    let page = store.decisions(*filter, PAGE).await?;
    let Some(last) = page.last() else {
        return Ok(None);
    };
    filter.after_id = last.id;
    let inputs = recorded_inputs(store, &page).await?;
    Ok(Some(page.into_iter().zip(inputs).collect()))
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
    let mut samples: HashMap<String, Vec<(LoggedDecision, DecisionInput)>> = HashMap::new();
    let mut filter = filter;
    while let Some(page) = next_page(store, &mut filter).await? {
        for (d, input) in page {
            let taken = samples.entry(d.decision.revision.clone()).or_default();
            if let (true, Ok(input)) = (taken.len() < sample, input) {
                taken.push((d, input));
            }
        }
    }
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
        let (readable, inputs): (Vec<LoggedDecision>, Vec<DecisionInput>) =
            decisions.into_iter().unzip();
        let verdicts = decide_outside_async(&recorded, &inputs);
        let mut same = 0;
        for (d, verdict) in readable.iter().zip(&verdicts) {
            let again = logged_verdict(verdict).map(|(_, o)| o).unwrap_or_default();
            if agrees(&d.decision.recorded, &again) {
                same += 1;
            } else {
                unreproduced += 1;
                writeln!(
                    out,
                    "NOT REPRODUCED decision {} under its own revision {}: recorded {}, now {}",
                    d.id,
                    short(&revision),
                    recorded_text(&d.decision.recorded),
                    again
                )?;
            }
        }
        writeln!(
            out,
            "determinism: revision {} reproduced {same} of {} sampled decisions",
            short(&revision),
            readable.len()
        )?;
    }
    Ok(unreproduced)
}

/// Decides every recorded input with the candidate; prints each change.
async fn replay_all(
    store: &Store,
    mut filter: DecisionFilter,
    candidate: &PolicyRuntime,
    limits: &Limits,
    out: &mut impl std::io::Write,
) -> Result<Tally> {
    let mut tally = Tally::default();
    let mut recorded = Recomputed::default();
    while let Some(page) = next_page(store, &mut filter).await? {
        let mut readable = Vec::with_capacity(page.len());
        let mut inputs = Vec::with_capacity(page.len());
        for (d, input) in page {
            match input {
                Ok(input) => {
                    readable.push(d);
                    inputs.push(input);
                }
                Err(why) => {
                    tally.changed += 1;
                    writeln!(out, "decision {}: {why}", d.id)?;
                }
            }
        }
        let verdicts = decide_outside_async(candidate, &inputs);
        for ((d, input), verdict) in readable.iter().zip(&inputs).zip(&verdicts) {
            let (revision, answer) = logged_verdict(verdict)
                .map(|(r, o)| (r.to_string(), o))
                .unwrap_or_default();
            if agrees(&d.decision.recorded, &answer) {
                tally.same += 1;
            } else {
                tally.changed += 1;
                let before = recorded.answer(store, limits, d, input).await?;
                out.write_all(changed(d, &before, &revision, &answer).as_bytes())?;
            }
        }
    }
    Ok(tally)
}

/// The recorded revisions, loaded once each, that give a compact
/// decision's answer back for the report of a change.
#[derive(Default)]
struct Recomputed(HashMap<String, Option<PolicyRuntime>>);

impl Recomputed {
    /// `d`'s recorded answer line: written whole, or its revision's answer
    /// on `input` again when that matches the recorded hash; otherwise
    /// only its kind.
    async fn answer(
        &mut self,
        store: &Store,
        limits: &Limits,
        d: &LoggedDecision,
        input: &DecisionInput,
    ) -> Result<String> {
        let (answer, answer_hash) = match &d.decision.recorded {
            Recorded::Whole { output, .. } => return Ok(output.clone()),
            Recorded::Compact {
                answer,
                answer_hash,
                ..
            } => (answer, answer_hash),
        };
        let revision = &d.decision.revision;
        if !self.0.contains_key(revision) {
            let runtime = recorded_revision(store, revision, limits).await?;
            self.0.insert(revision.clone(), runtime);
        }
        let Some(Some(policy)) = self.0.get(revision) else {
            return Ok(format!(r#"{{"decision":"{answer}"}}"#));
        };
        let verdicts = decide_outside_async(policy, std::slice::from_ref(input));
        Ok(match verdicts.first().and_then(logged_verdict) {
            Some((_, line)) if log_hash(&line) == *answer_hash => line,
            _ => format!(r#"{{"decision":"{answer}"}}"#),
        })
    }
}

/// Decides off the async threads: the sandbox's WASI calls block on a
/// runtime of their own (the worker runs them on the blocking pool too).
fn decide_outside_async(policy: &PolicyRuntime, inputs: &[DecisionInput]) -> Vec<Verdict> {
    tokio::task::block_in_place(|| decide_chunked(policy, inputs))
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
