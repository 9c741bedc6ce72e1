//! The playground: which ids the active policy extracts from a pasted tool
//! result, and what the active policy and a candidate decide on one input
//! (pre-filled from a recorded decision or a golden case).
//!
//! A candidate is a revision held here after an admin's upload (see
//! `candidates`) or any stored revision. Both, and the active revision,
//! answer as trials ([`PolicyRuntime::trial_decide`] and its siblings): in
//! the active runtime's sandbox, under the same limits, never counted,
//! never activated, and a failure never counts toward a fall-back.
//!
//! [`PolicyRuntime::trial_decide`]: crate::policy::PolicyRuntime::trial_decide

use std::sync::Arc;

use askama::Template;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Html;
use serde::Deserialize;

use super::candidates::Held;
use super::format::{at, render, short};
use super::state::Console;
use crate::api::{extraction_failed, parse_json, task_failed, ApiError};
use crate::policy::codec::{answer_line, decision_input, failure_line};
use crate::policy::types::{Decision, DecisionInput};
use crate::policy::{Evaluated, PolicyHandle, Revision};
use crate::worker::recorded_inputs;

/// The golden `decide` cases with an expected answer, by name (written by
/// the build script from `tests/golden/decide`).
const GOLDEN: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/golden_decide.rs"));

/// Stored revisions offered as candidates, newest first (any other can be
/// named by its hash: `#/playground?candidate=HASH`).
const CANDIDATES: i64 = 50;

/// The case the decide form starts from when nothing else is asked for.
const FIRST_CASE: &str = "failed-continues";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ViewQuery {
    decision: Option<i64>,
    golden: Option<String>,
    candidate: Option<String>,
}

struct Choice {
    value: String,
    label: String,
    selected: bool,
}

#[derive(Template)]
#[template(path = "playground.html")]
struct PlaygroundView {
    input: String,
    source: String,
    golden: Vec<Choice>,
    candidates: Vec<Choice>,
}

pub(super) async fn view(
    State(console): State<Console>,
    query: Result<Query<ViewQuery>, QueryRejection>,
) -> Result<Html<String>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let store = &console.app.store;
    let (input, source) = match (query.decision, query.golden.as_deref()) {
        (Some(id), _) => {
            let logged = store
                .decision(id)
                .await?
                .ok_or_else(|| ApiError::NotFound(format!("no recorded decision {id}")))?;
            let source = format!(
                "recorded decision {id} (execution {}, revision {})",
                logged.decision.execution_id,
                short(&logged.decision.revision)
            );
            let mut inputs = recorded_inputs(store, std::slice::from_ref(&logged)).await?;
            let input = match inputs.pop() {
                Some(Ok(input)) => serde_json::to_string_pretty(&input)
                    .map_err(|e| ApiError::Internal(format!("decision {id}'s input: {e}")))?,
                Some(Err(why)) => return Err(ApiError::NotFound(format!("decision {id}: {why}"))),
                None => return Err(ApiError::NotFound(format!("no recorded decision {id}"))),
            };
            (input, source)
        }
        (None, name) => {
            let name = name.unwrap_or(FIRST_CASE);
            let (_, input) = GOLDEN
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| ApiError::NotFound(format!("no golden decide case {name:?}")))?;
            ((*input).to_owned(), format!("golden case decide/{name}"))
        }
    };
    let golden = GOLDEN
        .iter()
        .map(|(name, _)| Choice {
            value: (*name).to_owned(),
            label: (*name).to_owned(),
            selected: query.golden.as_deref() == Some(*name),
        })
        .collect();
    let wanted = query.candidate.as_deref();
    let mut candidates: Vec<Choice> = console
        .candidates
        .list()
        .into_iter()
        .map(|h| Choice {
            selected: wanted == Some(h.revision.0.as_str()),
            label: format!(
                "{} {} ({}, uploaded here at {})",
                h.name,
                h.version,
                short(&h.revision.0),
                at(h.at)
            ),
            value: h.revision.0,
        })
        .collect();
    for r in store.recent_policy_revisions(CANDIDATES).await? {
        if candidates.iter().any(|c| c.value == r.hash) {
            continue;
        }
        candidates.push(Choice {
            selected: wanted == Some(r.hash.as_str()),
            label: format!("{} {} ({}, stored)", r.name, r.version, short(&r.hash)),
            value: r.hash,
        });
    }
    if let Some(hash) = wanted.filter(|w| !candidates.iter().any(|c| c.value == *w)) {
        candidates.push(Choice {
            value: hash.to_owned(),
            label: format!("{} (named)", short(hash)),
            selected: true,
        });
    }
    render(&PlaygroundView {
        input,
        source,
        golden,
        candidates,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ExtractBody {
    text: String,
}

#[derive(Template)]
#[template(path = "extracted.html")]
struct Extracted {
    revision: String,
    ids: Vec<String>,
}

/// What the active policy extracts from `text` (execution ids, protocol
/// tasks); nothing is linked.
pub(super) async fn extract(
    State(console): State<Console>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Html<String>, ApiError> {
    let ExtractBody { text } = parse_json(&console.app.caps.tool_result.take(body)?)?;
    let evaluated = PolicyHandle::from(&console.app.policy)
        .run(move |runtime| runtime.trial_extract_links(&text))
        .await
        .map_err(task_failed)?;
    let links = evaluated.value.map_err(extraction_failed)?;
    let ids = links.iter().map(ToString::to_string).collect();
    render(&Extracted {
        revision: evaluated.revision.0,
        ids,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DecideBody {
    input: String,
    #[serde(default)]
    candidate: String,
}

struct Answer {
    revision: String,
    answer: String,
    failed: bool,
}

#[derive(Template)]
#[template(path = "decided.html")]
struct Decided {
    active: Answer,
    candidate: Option<Answer>,
}

impl Decided {
    fn same(&self) -> bool {
        self.candidate
            .as_ref()
            .is_some_and(|c| c.answer == self.active.answer)
    }
}

/// One decision's answer line, or the failure line the golden files use.
fn answer(evaluated: Evaluated<Vec<Decision>>) -> Answer {
    let (answer, failed) = match evaluated.value {
        Ok(decisions) => match decisions.first().map(answer_line) {
            Some(Ok(line)) => (line, false),
            Some(Err(e)) => (failure_line(&e.to_string()), true),
            None => (failure_line("the policy answered no decision"), true),
        },
        Err(e) => (failure_line(&e.to_string()), true),
    };
    Answer {
        revision: evaluated.revision.0,
        answer,
        failed,
    }
}

/// The active revision's decision on `input`, and the candidate's beside it
/// if one is named. A malformed input is a 400 naming what is wrong.
pub(super) async fn decide(
    State(console): State<Console>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Html<String>, ApiError> {
    let DecideBody { input, candidate } = parse_json(&console.app.caps.decision_input.take(body)?)?;
    let input =
        decision_input(&input).map_err(|e| ApiError::BadRequest(format!("decision input: {e}")))?;
    let policy = PolicyHandle::from(&console.app.policy);
    let inputs = vec![input];
    let asked = inputs.clone();
    let active = policy
        .run(move |runtime| runtime.trial_decide(&asked))
        .await
        .map_err(task_failed)?;
    let candidate = match candidate.trim() {
        "" => None,
        hash => Some(answer(decide_candidate(&console, hash, inputs).await?)),
    };
    render(&Decided {
        active: answer(active),
        candidate,
    })
}

/// The candidate's decisions: a held upload, or a stored revision. The
/// bytes (up to the upload cap) are fetched only if this process does not
/// hold the revision compiled.
async fn decide_candidate(
    console: &Console,
    hash: &str,
    inputs: Vec<DecisionInput>,
) -> Result<Evaluated<Vec<Decision>>, ApiError> {
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::BadRequest(format!(
            "candidate {hash:?} is not a revision (64 hex digits)"
        )));
    }
    let policy = PolicyHandle::from(&console.app.policy);
    let revision = Revision(hash.to_owned());
    let asked = inputs.clone();
    if let Some(kept) = policy
        .run(move |runtime| runtime.trial_decide_kept(&revision, &asked))
        .await
        .map_err(task_failed)?
    {
        return Ok(kept);
    }
    let bytes = match console.candidates.get(hash) {
        Some(held) => held.bytes,
        None => Arc::new(
            console
                .app
                .store
                .policy_revision_wasm(hash)
                .await?
                .ok_or_else(|| {
                    ApiError::NotFound(format!(
                        "no candidate {hash} is held here or stored; upload it again"
                    ))
                })?,
        ),
    };
    policy
        .run(move |runtime| runtime.trial_decide_with(&bytes, &inputs))
        .await
        .map_err(task_failed)?
        .map_err(|e| ApiError::PolicyRejected(vec![e.to_string()]))
}

#[derive(Template)]
#[template(path = "candidate.html")]
struct HeldView {
    hash: String,
    name: String,
    version: String,
}

/// 204 when the token may upload a candidate: the page asks first, so a
/// runtime token is refused before a component of megabytes is sent (a
/// server that refuses a body it has not read may close the connection
/// under the browser's upload).
pub(super) async fn may_hold() -> StatusCode {
    StatusCode::NO_CONTENT
}

/// Holds an uploaded component as a candidate (admin only): compiled and
/// described under the sandbox's limits, refused with the reason if it is
/// not a policy, never saved or activated.
pub(super) async fn hold_candidate(
    State(console): State<Console>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Html<String>, ApiError> {
    let bytes = console.app.caps.policy.take(body)?;
    if bytes.is_empty() {
        return Err(ApiError::BadRequest(
            "the body must be the candidate component's bytes".into(),
        ));
    }
    let bytes = Arc::new(bytes.to_vec());
    let compiled = Arc::clone(&bytes);
    let described = PolicyHandle::from(&console.app.policy)
        .run(move |runtime| runtime.trial_describe(&compiled))
        .await
        .map_err(task_failed)?
        .map_err(|e| ApiError::PolicyRejected(vec![e.to_string()]))?;
    let info = described
        .value
        .map_err(|e| ApiError::PolicyRejected(vec![format!("describe failed: {e}")]))?;
    let held = Held {
        revision: described.revision,
        bytes,
        name: info.name,
        version: info.version,
        at: console.app.clock.now(),
    };
    let view = HeldView {
        hash: held.revision.0.clone(),
        name: held.name.clone(),
        version: held.version.clone(),
    };
    console.candidates.hold(held);
    render(&view)
}
