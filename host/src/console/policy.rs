//! The policy view: the active revision and this process's counters, the
//! shadow revision and its recent disagreements, and the stored revisions,
//! with the admin's promote, drop and roll-back buttons (the API's routes).

use askama::Template;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Html;

use super::format::{render, short, Moment};
use super::state::Console;
use crate::api::{task_failed, ApiError, Scope};
use crate::policy::PolicyHandle;
use crate::store::Shown;

/// Disagreements shown: the newest; the count says how many there are.
const RECENT: i64 = 20;
/// Stored revisions shown, newest first.
const REVISIONS: usize = 50;
/// Disagreements counted at most: beyond, the page says "more than".
const COUNTED: i64 = 10_000;

struct Described {
    hash: String,
    name: String,
    version: String,
}

struct DisagreementView {
    at: Moment,
    session: String,
    execution: String,
    active: String,
    shadow: String,
    input: String,
    left_out: i64,
}

struct ShadowView {
    revision: Described,
    recorded: String,
    decisions: u64,
    failures: u64,
    recent: Vec<DisagreementView>,
}

struct RevisionRow {
    hash: String,
    short: String,
    name: String,
    version: String,
    created: Moment,
    signed: bool,
    role: &'static str,
}

#[derive(Template)]
#[template(path = "policy.html")]
struct PolicyView {
    /// Whether the page offers the policy's buttons: not to the read
    /// token, which the API would refuse (the runtime's token is shown
    /// them, and the API's 403 says what it lacks).
    acts: bool,
    active: Described,
    counters: Vec<(&'static str, u64)>,
    shadow: Option<ShadowView>,
    revisions: Vec<RevisionRow>,
    more_revisions: bool,
}

fn described(hash: String, info: Option<crate::policy::types::PolicyInfo>) -> Described {
    let (name, version) = info.map_or_else(
        || ("(describe failed)".to_owned(), String::new()),
        |i| (i.name, i.version),
    );
    Described {
        hash,
        name,
        version,
    }
}

pub(super) async fn view(
    State(console): State<Console>,
    headers: HeaderMap,
) -> Result<Html<String>, ApiError> {
    let acts = console.scope(&headers) != Some(Scope::Read);
    let app = &console.app;
    let now = app.clock.now();
    let policy = PolicyHandle::from(&app.policy);
    let active = policy.describe().await.map_err(task_failed)?;
    let shadow = policy
        .run(|runtime| runtime.shadow_describe())
        .await
        .map_err(task_failed)?;
    let stats = app.policy.stats();
    let counters = vec![
        ("evaluations", stats.evaluations),
        ("failures", stats.failures.values().sum()),
        ("swaps", stats.swaps),
        ("fallbacks", stats.fallbacks),
        ("rejected candidates", stats.rejected_candidates),
    ];
    let shadow = match shadow {
        None => None,
        Some((revision, info)) => {
            let recorded = app
                .store
                .count_disagreements_up_to(&revision.0, COUNTED + 1)
                .await?;
            let recorded = if recorded > COUNTED {
                format!("more than {COUNTED}")
            } else {
                recorded.to_string()
            };
            let recent = app.store.shown_disagreements(&revision.0, RECENT).await?;
            let here = app.policy.shadow().stats();
            Some(ShadowView {
                revision: described(revision.0, info.ok()),
                recorded,
                decisions: here.decisions,
                failures: here.failures,
                recent: recent
                    .into_iter()
                    .map(
                        |Shown {
                             row: d, left_out, ..
                         }| DisagreementView {
                            at: Moment::new(d.at, now),
                            session: d.session_id.to_string(),
                            execution: d.execution_id.to_string(),
                            active: d.active_output,
                            shadow: d.shadow_output,
                            input: d.input,
                            left_out,
                        },
                    )
                    .collect(),
            })
        }
    };
    let active = described(active.revision.0, active.value.ok());
    let mut revisions = app
        .store
        .recent_policy_revisions(REVISIONS as i64 + 1)
        .await?;
    let more_revisions = revisions.len() > REVISIONS;
    revisions.truncate(REVISIONS);
    let shadow_hash = shadow.as_ref().map(|s| s.revision.hash.as_str());
    let revisions = revisions
        .into_iter()
        .map(|r| RevisionRow {
            role: if r.hash == active.hash {
                "active"
            } else if Some(r.hash.as_str()) == shadow_hash {
                "shadow"
            } else {
                ""
            },
            short: short(&r.hash).to_owned(),
            hash: r.hash,
            name: r.name,
            version: r.version,
            created: Moment::new(r.created_at, now),
            signed: r.key_id.is_some(),
        })
        .collect();
    render(&PolicyView {
        acts,
        active,
        counters,
        shadow,
        revisions,
        more_revisions,
    })
}
