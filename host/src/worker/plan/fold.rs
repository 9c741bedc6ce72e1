//! Folding the notes of a session's finished executions into the one note
//! of its continuation, within a size cap.

use uuid::Uuid;

use crate::agent::chat::DEFAULT_BUDGET_CHARS;
use crate::policy::types::Outcome;

/// Separates the notes of executions folded into one continuation.
pub const FOLD_SEPARATOR: &str = "\n\n---\n\n";

/// The most bytes of notes one continuation carries in full: the policy's
/// default per-note limit (`Limits::max_note_bytes`, 64 KiB).
///
/// Why a cap: every execution of a session that finished since its last
/// continuation is folded into one note, and each note may be as long as
/// the per-note limit. A session that started a few hundred executions
/// would send the agent megabytes in one message, more than any model's
/// context and than a webhook receiver expects. Why this cap: a folded note
/// is then never much longer than the longest single note a policy may
/// return, so whatever a receiver allows for one note (the `chatWith`
/// budget, `agent::chat::DEFAULT_BUDGET_CHARS`, leaves room for it and the
/// system prompt) holds for a folded one too. The first note always goes
/// in whole, so no note the policy returned is ever cut. The executions
/// beyond the cap are named in one line (see [`MAX_REST_LINE_BYTES`]);
/// they are part of the continuation all the same and settled with it.
pub const MAX_FOLDED_NOTE_BYTES: usize = 64 << 10;

/// The most bytes of the line naming the executions beyond
/// [`MAX_FOLDED_NOTE_BYTES`]: about eighty ids with their outcome. Beyond
/// it only their number is given; the continuation's execution list (sent
/// with it) still names every one.
pub const MAX_REST_LINE_BYTES: usize = 4 << 10;

// The longest folded note fits the default `chatWith` budget with room for
// a system prompt of 16 KiB and some history (bytes bound characters).
const _: () = assert!(
    MAX_FOLDED_NOTE_BYTES + FOLD_SEPARATOR.len() + MAX_REST_LINE_BYTES + (16 << 10)
        <= DEFAULT_BUDGET_CHARS
);

/// One finished execution the policy continued, with its note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Finished {
    /// The execution.
    pub id: Uuid,
    /// How it ended, as classified.
    pub outcome: Outcome,
    /// The policy's note about it.
    pub note: String,
}

/// The continuation's note: the notes in order, joined with
/// [`FOLD_SEPARATOR`], while they fit in [`MAX_FOLDED_NOTE_BYTES`] (the
/// first always); then one bounded line for the rest, if any.
pub(super) fn fold_notes(finished: &[Finished]) -> String {
    let mut note = String::new();
    let mut shown = 0;
    for f in finished {
        if shown > 0 {
            if note.len() + FOLD_SEPARATOR.len() + f.note.len() > MAX_FOLDED_NOTE_BYTES {
                break;
            }
            note.push_str(FOLD_SEPARATOR);
        }
        note.push_str(&f.note);
        shown += 1;
    }
    if let Some(rest) = finished.get(shown..).filter(|r| !r.is_empty()) {
        note.push_str(FOLD_SEPARATOR);
        note.push_str(&rest_line(rest));
    }
    note
}

/// "… and N more executions finished: <id> <outcome>, …", at most
/// [`MAX_REST_LINE_BYTES`] long.
fn rest_line(rest: &[Finished]) -> String {
    let noun = if rest.len() == 1 {
        "execution"
    } else {
        "executions"
    };
    let head = format!("… and {} more {noun} finished: ", rest.len());
    let tail = " (their notes were left out to keep this message short).";
    // The room for the list, keeping space for the head, the tail and the
    // count of the ids that do not fit.
    let count = format!("; and {} more", rest.len());
    let room = MAX_REST_LINE_BYTES.saturating_sub(head.len() + tail.len() + count.len());
    let mut list = String::new();
    let mut listed = 0;
    for f in rest {
        let item = format!("{} {}", f.id, f.outcome.as_str());
        let sep = if listed == 0 { "" } else { ", " };
        if list.len() + sep.len() + item.len() > room {
            break;
        }
        list.push_str(sep);
        list.push_str(&item);
        listed += 1;
    }
    if listed < rest.len() {
        list.push_str(&format!("; and {} more", rest.len() - listed));
    }
    format!("{head}{list}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Limits;

    fn finished(n: usize, note_bytes: usize) -> Vec<Finished> {
        (0..n)
            .map(|i| Finished {
                id: Uuid::from_u128(i as u128 + 1),
                outcome: if i % 2 == 0 {
                    Outcome::Failed
                } else {
                    Outcome::Completed
                },
                note: format!("execution {i}: {}", "x".repeat(note_bytes)),
            })
            .collect()
    }

    #[test]
    fn the_cap_holds_a_whole_note_of_the_policy_limit() {
        assert!(MAX_FOLDED_NOTE_BYTES >= Limits::default().max_note_bytes);
    }

    #[test]
    fn notes_within_the_cap_are_joined_whole() {
        let all = finished(3, 100);
        let notes: Vec<&str> = all.iter().map(|f| f.note.as_str()).collect();
        assert_eq!(fold_notes(&all), notes.join(FOLD_SEPARATOR));
    }

    #[test]
    fn beyond_the_cap_the_rest_is_one_bounded_line() {
        let all = finished(5000, 1000);
        let note = fold_notes(&all);
        let (kept, rest) = note.rsplit_once(FOLD_SEPARATOR).expect("a rest line");
        assert!(kept.len() <= MAX_FOLDED_NOTE_BYTES, "{}", kept.len());
        assert!(rest.len() <= MAX_REST_LINE_BYTES, "{}", rest.len());
        let shown = kept.split(FOLD_SEPARATOR).count();
        assert!(shown > 1 && shown < 5000);
        assert!(
            rest.starts_with(&format!(
                "… and {} more executions finished: ",
                5000 - shown
            )),
            "{rest}"
        );
        let first_rest = &all[shown];
        assert!(rest.contains(&format!(
            "{} {}",
            first_rest.id,
            first_rest.outcome.as_str()
        )));
        assert!(rest.contains("more (their notes"), "{rest}");
    }

    #[test]
    fn a_first_note_over_the_cap_is_kept_whole() {
        let all = finished(2, MAX_FOLDED_NOTE_BYTES + 10);
        let note = fold_notes(&all);
        assert!(note.starts_with(&all[0].note));
        assert!(note.ends_with(&format!(
            "… and 1 more execution finished: {} completed (their notes were left out to keep this message short).",
            all[1].id
        )));
    }
}
