//! The messages `chatWith` sends: the system prompt, the replayed history
//! within a character budget, and the note (see the `chat` module docs for
//! the order and the roles).
//!
//! # Why a budget, and why the oldest turns go first
//!
//! A model endpoint answers a request longer than its context window with a
//! 400, which the adapter must treat as permanent (a malformed request does
//! not heal). Replaying a long session whole would therefore turn every
//! later continuation of it into a failure. So the replay is bounded: the
//! system prompt (with the SOUL) and the note are always sent, since without
//! them the model does not know how to behave or why it was called; the
//! newest turns come next, as the model needs the latest context most; and
//! the oldest are left out, replaced by one marker saying how many. Stored
//! system turns are bounded too (half the budget, newest kept, the rest
//! counted in one line): the runtime writes them, and they can add up. The
//! turns kept are a contiguous run ending at the newest, so the model never
//! sees a conversation with holes in the middle.
//!
//! The budget counts characters of message text, not tokens: tokenisers
//! differ per model and the host has none. A token is roughly four
//! characters of English, so the default leaves a model with a 32k-token
//! context room for its reply.

use serde::Serialize;

use super::chat::NOTE_LABEL;
use super::{ChatTurn, HistoryError};

/// Characters of message text one `chatWith` request carries when no budget
/// is configured (see the module docs): about 25k tokens.
pub const DEFAULT_BUDGET_CHARS: usize = 100_000;

/// One message of a chat-completions request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`, as the protocol names them.
    pub role: String,
    /// The text, verbatim.
    pub content: String,
}

impl ChatMessage {
    fn new(role: &str, content: String) -> Self {
        Self {
            role: role.to_string(),
            content,
        }
    }

    /// Its size as the budget counts it.
    fn chars(&self) -> usize {
        self.content.chars().count()
    }
}

/// The message standing for the `omitted` oldest turns. Labelled like the
/// note, with role `user`, for the reasons the `chat` module docs give.
fn omitted_marker(omitted: usize) -> ChatMessage {
    let turns = if omitted == 1 { "turn" } else { "turns" };
    ChatMessage::new(
        "user",
        format!(
            "{NOTE_LABEL}\n{omitted} earlier {turns} of this conversation were left out \
             to fit the model's context budget; the newest turns follow."
        ),
    )
}

#[cfg(any(test, feature = "test-support"))]
/// Builds the request's messages from the stored history, the SOUL and the
/// note with the whole history replayed. Public so a runtime that embeds
/// the library can send what `chatWith` would (see [`build_messages_within`]
/// for the bounded replay `chatWith` uses).
pub fn build_messages(
    history: &[ChatTurn],
    soul: &str,
    note: &str,
) -> Result<Vec<ChatMessage>, HistoryError> {
    build_messages_within(history, soul, note, usize::MAX)
}

/// Like [`build_messages`], with at most `budget` characters of message
/// text: the system prompt and the note always, then the newest turns that
/// fit, and a marker for the oldest ones left out (see the module docs).
/// Only a system prompt and note that are themselves over the budget make a
/// longer request; they are bounded by the policy's limits.
pub fn build_messages_within(
    history: &[ChatTurn],
    soul: &str,
    note: &str,
    budget: usize,
) -> Result<Vec<ChatMessage>, HistoryError> {
    let mut system: Vec<&str> = Vec::new();
    let mut replay = Vec::with_capacity(history.len());
    for turn in history {
        match turn.role.as_str() {
            "system" => system.push(&turn.content),
            "user" | "assistant" => replay.push(ChatMessage::new(&turn.role, turn.content.clone())),
            other => {
                return Err(HistoryError::Invalid(format!(
                    "stored turn with unknown role {other:?}"
                )))
            }
        }
    }
    let mut prompt = system_within(&system, budget / 2);
    if !soul.is_empty() {
        if !prompt.is_empty() {
            prompt.push_str("\n\n");
        }
        prompt.push_str(soul);
    }
    let note = ChatMessage::new("user", format!("{NOTE_LABEL}\n{note}"));
    let fixed = prompt.chars().count() + note.chars();
    let kept_from = first_kept(&replay, budget.saturating_sub(fixed));

    let mut messages = Vec::with_capacity(replay.len() - kept_from + 3);
    if !prompt.is_empty() {
        messages.push(ChatMessage::new("system", prompt));
    }
    if kept_from > 0 {
        messages.push(omitted_marker(kept_from));
    }
    messages.extend(replay.drain(kept_from..));
    messages.push(note);
    Ok(messages)
}

/// The stored system turns within `room` characters: the newest that fit,
/// in their order, and a line counting the older ones left out. Stored
/// system turns come from the runtime (`POST /v1/sessions/{id}/turns`) and
/// can add up to anything; unbounded, they alone could push every request
/// past the model's context. Half the budget keeps room for the replay.
fn system_within(system: &[&str], room: usize) -> String {
    let mut left = room;
    let mut kept = system.len();
    while let Some(turn) = kept.checked_sub(1).map(|i| system[i]) {
        match left.checked_sub(turn.chars().count() + 2) {
            Some(rest) => {
                left = rest;
                kept -= 1;
            }
            None => break,
        }
    }
    let mut parts: Vec<String> = Vec::with_capacity(system.len() - kept + 1);
    if kept > 0 {
        parts.push(format!(
            "[{kept} earlier system message{} left out to fit the model's context budget]",
            if kept == 1 { "" } else { "s" }
        ));
    }
    parts.extend(system[kept..].iter().map(|s| s.to_string()));
    parts.join("\n\n")
}

/// The index of the oldest turn replayed: 0 when all fit in `room`
/// characters; otherwise the start of the longest run of newest turns that
/// fits beside the marker (sized for the most turns it could count, so the
/// real one is never longer).
fn first_kept(replay: &[ChatMessage], room: usize) -> usize {
    let total: usize = replay.iter().map(ChatMessage::chars).sum();
    if total <= room {
        return 0;
    }
    let mut left = room.saturating_sub(omitted_marker(replay.len()).chars());
    let mut from = replay.len();
    while let Some(turn) = from.checked_sub(1).map(|i| &replay[i]) {
        match left.checked_sub(turn.chars()) {
            Some(rest) => {
                left = rest;
                from -= 1;
            }
            None => break,
        }
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(messages: &[ChatMessage]) -> usize {
        messages.iter().map(ChatMessage::chars).sum()
    }

    #[test]
    fn messages_without_system_turn_or_soul() {
        let turns = [ChatTurn::new("user", "hi")];
        let messages = build_messages(&turns, "", "n").expect("valid history");
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].role, "user");
        assert_eq!(messages[1].content, format!("{NOTE_LABEL}\nn"));
        let bad = [ChatTurn::new("tool", "x")];
        assert!(matches!(
            build_messages(&bad, "s", "n"),
            Err(HistoryError::Invalid(_))
        ));
    }

    #[test]
    fn the_oldest_turns_go_first_and_a_marker_counts_them() {
        let mut turns = vec![ChatTurn::new("system", "be brief")];
        for i in 0..100 {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            turns.push(ChatTurn::new(
                role,
                format!("turn {i:03} {}", "é".repeat(40)),
            ));
        }
        let all = build_messages(&turns, "soul", "note").expect("valid");
        let budget = size(&all) / 3;
        let messages = build_messages_within(&turns, "soul", "note", budget).expect("valid");
        assert!(size(&messages) <= budget, "{} > {budget}", size(&messages));
        assert_eq!(messages[0].content, "be brief\n\nsoul");
        assert_eq!(messages.last(), all.last(), "the note is kept");
        let kept = messages.len() - 3;
        assert!(kept > 0 && kept < 100);
        assert!(messages[1]
            .content
            .contains(&format!("{} earlier turns", 100 - kept)));
        assert_eq!(
            messages[2..messages.len() - 1],
            all[all.len() - 1 - kept..all.len() - 1]
        );
        // Everything fits: no marker, nothing left out.
        let roomy = build_messages_within(&turns, "soul", "note", size(&all)).expect("valid");
        assert_eq!(roomy, all);
    }

    #[test]
    fn stored_system_turns_are_bounded_newest_first() {
        let big = "s".repeat(600);
        let history: Vec<ChatTurn> = (0..10)
            .map(|i| ChatTurn::new("system", format!("{i}{big}")))
            .collect();
        let messages = build_messages_within(&history, "soul", "n", 2_000).expect("messages");
        let prompt = &messages[0].content;
        assert!(prompt.chars().count() <= 1_200, "{}", prompt.len());
        assert!(
            prompt.starts_with("[9 earlier system messages left out"),
            "{prompt}"
        );
        assert!(prompt.contains(&format!("9{big}")), "the newest is kept");
        assert!(prompt.ends_with("soul"));
    }

    #[test]
    fn a_budget_below_the_prompt_and_note_keeps_them_alone() {
        let turns = [ChatTurn::new("user", "a"), ChatTurn::new("assistant", "b")];
        let messages = build_messages_within(&turns, "soul", "note", 1).expect("valid");
        let roles: Vec<&str> = messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "user"]);
        assert!(messages[1].content.contains("2 earlier turns"));
    }
}
