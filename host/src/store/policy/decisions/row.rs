//! A decision log row both ways: the `INSERT` of a pass's decisions, whole
//! or compact, and a row read back. What a compact row leaves NULL (and so
//! costs nothing) is decided here, on both sides.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{
    InputParts, LoggedDecision, NewDecision, Recorded, SeenWindow, ROWS_PER_INSERT, WRITTEN,
};
use crate::store::decode::RowExt;
use crate::store::dialect::{query, trunc, Query, Row};
use crate::store::{Result, StoreError};

/// One `INSERT` of `chunk`, all taken at `now` (`$1`). Its text depends on
/// the chunk's size: only a full chunk's, which every large pass reuses,
/// is kept prepared; another size is compiled for its one use rather than
/// kept by every connection (see [`Query::uncached`]).
pub(super) fn insert_rows(chunk: &[NewDecision], now: DateTime<Utc>) -> Query<'_> {
    let width = WRITTEN.len();
    let rows: Vec<String> = (0..chunk.len())
        .map(|i| {
            let first = 2 + i * width;
            let values: Vec<String> = (first..first + width)
                .zip(WRITTEN)
                .map(|(n, col)| match col {
                    "revision_id" => {
                        format!("(SELECT id FROM nomos_decision_revisions WHERE hash = ${n})")
                    }
                    _ => format!("${n}"),
                })
                .collect();
            format!("($1, {})", values.join(", "))
        })
        .collect();
    let sql = format!(
        "INSERT INTO nomos_policy_decisions (decided_at, {}) VALUES {}",
        WRITTEN.join(", "),
        rows.join(", ")
    );
    let mut q = query(sql);
    if chunk.len() != ROWS_PER_INSERT {
        q = q.uncached();
    }
    let mut q = q.bind(now);
    for d in chunk {
        q = q
            .bind(d.session_id)
            .bind(d.execution_id)
            .bind(match d.recorded {
                Recorded::Compact { .. } => "",
                Recorded::Whole { .. } => d.revision.as_str(),
            })
            .bind(match d.recorded {
                Recorded::Compact { .. } => Some(d.revision.as_str()),
                Recorded::Whole { .. } => None,
            });
        q = match &d.recorded {
            Recorded::Whole { input, output } => bind_whole(q, d, input, output),
            Recorded::Compact {
                input,
                answer,
                answer_hash,
            } => bind_compact(q, d, now, input, answer, answer_hash),
        };
    }
    q
}

/// A whole row's values from `input` on: its texts, and no parts.
fn bind_whole<'a>(q: Query<'a>, d: &'a NewDecision, input: &'a str, output: &'a str) -> Query<'a> {
    let none_time: Option<DateTime<Utc>> = None;
    let (none_text, none_int, none_bytes): (Option<&str>, Option<i32>, Option<&[u8]>) =
        (None, None, None);
    q.bind(input)
        .bind(output)
        .bind(d.action.as_str())
        .bind(d.idempotency_key.as_deref())
        .bind(d.detail.as_deref())
        .bind(none_time)
        .bind(none_text)
        .bind(none_time)
        .bind(none_text)
        .bind(none_text)
        .bind(none_time)
        .bind(none_time)
        .bind(none_text)
        .bind(none_int)
        .bind(none_bytes)
        .bind(none_int)
        .bind(none_int)
        .bind(none_bytes)
        .bind(none_text)
        .bind(none_bytes)
}

/// A compact row's values from `input` on: empty texts, and the parts.
/// What is usually nothing is stored as NULL, which costs no bytes: the
/// input's `now` when it is the decision's time, counts of 0, no list, the
/// answer its action implies.
fn bind_compact<'a>(
    q: Query<'a>,
    d: &'a NewDecision,
    now: DateTime<Utc>,
    input: &'a InputParts,
    answer: &'a str,
    answer_hash: &'a [u8],
) -> Query<'a> {
    let seen_now = (trunc(input.now) != now).then_some(trunc(input.now));
    let answer = (implied_answer(&d.action) != Some(answer)).then_some(answer);
    let nonzero = |n: i32| (n != 0).then_some(n);
    let window = input.window.as_ref();
    q.bind("")
        .bind("")
        .bind(d.action.as_str())
        .bind(d.idempotency_key.as_deref())
        .bind(d.detail.as_deref())
        .bind(seen_now)
        .bind(input.status.as_str())
        .bind(input.finished_at)
        .bind(input.task.as_ref().map(|(source, _)| source.as_str()))
        .bind(input.task.as_ref().map(|(_, id)| id.as_str()))
        .bind(window.map(|w| w.opened_at))
        .bind(window.map(|w| w.expires_at))
        .bind(window.map(|w| w.route.as_str()))
        .bind(nonzero(input.continuations_in_window))
        .bind(packed_ids(&input.still_running))
        .bind(nonzero(input.attempts))
        .bind(input.result_cut)
        .bind(input.hash.as_slice())
        .bind(answer)
        .bind(answer_hash)
}

/// The answer an action implies, which a compact row does not write again:
/// a wait was waited, a drop dropped, a failure failed, and a continue was
/// continued, deferred or refused. Only a retry's re-decision, logged
/// `continued` or `dropped` whatever each input's answer, writes its own.
fn implied_answer(action: &str) -> Option<&'static str> {
    match action {
        "waited" => Some("wait"),
        "continued" | "deferred" | "refused" => Some("continue"),
        "dropped" => Some("drop"),
        "failed" => Some("error"),
        _ => None,
    }
}

/// A UUID list as 16 bytes each, NULL when empty (the common case).
fn packed_ids(ids: &[Uuid]) -> Option<Vec<u8>> {
    (!ids.is_empty()).then(|| ids.iter().flat_map(|id| *id.as_bytes()).collect())
}

/// The inverse of [`packed_ids`].
fn unpacked_ids(bytes: Option<Vec<u8>>) -> Result<Vec<Uuid>> {
    let bytes = bytes.unwrap_or_default();
    if !bytes.len().is_multiple_of(16) {
        return Err(StoreError::Corrupt {
            column: "still_running",
            value: hex::encode(&bytes),
        });
    }
    Ok(bytes
        .chunks_exact(16)
        .filter_map(|b| Uuid::from_slice(b).ok())
        .collect())
}

pub(in crate::store) fn logged(r: &Row) -> Result<LoggedDecision> {
    let decided_at = r.time("decided_at")?;
    let recorded = match r.opt_bytes("input_hash")? {
        None => Recorded::Whole {
            input: r.text("input")?,
            output: r.text("output")?,
        },
        Some(hash) => Recorded::Compact {
            input: input_parts(r, decided_at, hash)?,
            answer: match r.opt_text("answer")? {
                Some(answer) => answer,
                None => implied_answer(&r.text("action")?)
                    .unwrap_or_default()
                    .to_string(),
            },
            answer_hash: r.opt_bytes("answer_hash")?.unwrap_or_default(),
        },
    };
    let revision = match r.opt_text("revision_hash")? {
        Some(hash) => hash,
        None => r.text("revision")?,
    };
    Ok(LoggedDecision {
        id: r.bigint("id")?,
        decided_at,
        decision: NewDecision {
            session_id: r.uuid("session_id")?,
            execution_id: r.uuid("execution_id")?,
            revision,
            recorded,
            action: r.text("action")?,
            idempotency_key: r.opt_text("idempotency_key")?,
            detail: r.opt_text("detail")?,
        },
    })
}

/// A compact row's input parts (see [`bind_compact`] for what NULL means).
fn input_parts(r: &Row, decided_at: DateTime<Utc>, hash: Vec<u8>) -> Result<InputParts> {
    let task = match (r.opt_parsed("task_source")?, r.opt_text("task_id")?) {
        (Some(source), Some(id)) => Some((source, id)),
        _ => None,
    };
    let window = match (
        r.opt_time("window_opened_at")?,
        r.opt_time("window_expires_at")?,
        r.opt_parsed("window_route")?,
    ) {
        (Some(opened_at), Some(expires_at), Some(route)) => Some(SeenWindow {
            opened_at,
            expires_at,
            route,
        }),
        _ => None,
    };
    Ok(InputParts {
        now: r.opt_time("seen_now")?.unwrap_or(decided_at),
        status: r.opt_text("status")?.unwrap_or_default(),
        finished_at: r.opt_time("finished_at")?,
        task,
        window,
        continuations_in_window: r.opt_int("in_window")?.unwrap_or(0),
        still_running: unpacked_ids(r.opt_bytes("still_running")?)?,
        attempts: r.opt_int("attempts")?.unwrap_or(0),
        result_cut: r.opt_int("result_cut")?,
        hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_lists_pack_to_16_bytes_each_and_back() {
        let ids = [Uuid::from_u128(1), Uuid::from_u128(u128::MAX)];
        let packed = packed_ids(&ids);
        assert_eq!(packed.as_ref().map(Vec::len), Some(32));
        assert_eq!(unpacked_ids(packed).ok(), Some(ids.to_vec()));
        assert_eq!(packed_ids(&[]), None);
        assert!(unpacked_ids(Some(vec![0; 15])).is_err());
    }
}
