//! Which execution ids a tool result names.
//!
//! A tool that starts asynchronous work answers with text such as
//! `running, execution 3f2504e0-4f89-11d3-9a0c-0305e82c3301`. Only a UUID
//! introduced by the word "execution" is linked: a bare UUID in a tool result
//! is as likely a container, a session or a request id, and linking it would
//! make the system re-invoke the agent for something it never started.
//!
//! The scan is a single pass over the bytes with bounded work per keyword
//! hit, so its cost is linear in the input whatever the input holds.

/// At most this many ids are taken from one tool result; the rest are
/// ignored, which bounds the links one tool result can create.
pub const MAX_IDS: usize = 64;

/// At most this many separator bytes may stand between the keyword (with
/// its optional `id` suffix) and the UUID.
pub const MAX_SEPARATORS: usize = 6;

const KEYWORD: &[u8] = b"execution";
const UUID_LEN: usize = 36;
const NIL_UUID: &str = "00000000-0000-0000-0000-000000000000";

/// The execution ids in `text`: canonical lowercase, de-duplicated, in the
/// order they first appear, at most [`MAX_IDS`].
pub fn extract_execution_ids(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut ids: Vec<String> = Vec::new();
    let mut from = 0;
    while ids.len() < MAX_IDS {
        let Some(at) = find_keyword(bytes, from) else {
            break;
        };
        from = at + KEYWORD.len();
        if at > 0 && is_word_byte(bytes[at - 1]) {
            continue;
        }
        let start = skip_separators(bytes, skip_id_suffix(bytes, from));
        // `"execution": {"id": "…"}`: the id key may follow the separators.
        let start = match (uuid_at(bytes, start), skip_id_word(bytes, start)) {
            (None, after_id) if after_id != start => skip_separators(bytes, after_id),
            _ => start,
        };
        let Some(id) = uuid_at(bytes, start) else {
            continue;
        };
        from = start + UUID_LEN;
        if id != NIL_UUID && !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// The position of the next case-insensitive "execution" at or after `from`.
fn find_keyword(bytes: &[u8], from: usize) -> Option<usize> {
    let last = bytes.len().checked_sub(KEYWORD.len())?;
    (from..=last).find(|&i| bytes[i..i + KEYWORD.len()].eq_ignore_ascii_case(KEYWORD))
}

/// Skips `id`, `_id`, `-id` or ` id` right after the keyword (as in
/// `executionId`, `execution_id`, `execution id`), if it is a whole word.
fn skip_id_suffix(bytes: &[u8], at: usize) -> usize {
    let rest = &bytes[at.min(bytes.len())..];
    let skip = match rest.first() {
        Some(b'_' | b'-' | b' ') => 1,
        _ => 0,
    };
    let after = at + skip + 2;
    let is_id = rest.len() >= skip + 2 && rest[skip..skip + 2].eq_ignore_ascii_case(b"id");
    if is_id && bytes.get(after).is_none_or(|&b| !is_word_byte(b)) {
        after
    } else {
        at
    }
}

/// Skips a whole word `id` at `at`, as the key of a nested object.
fn skip_id_word(bytes: &[u8], at: usize) -> usize {
    let is_id = bytes
        .get(at..at + 2)
        .is_some_and(|w| w.eq_ignore_ascii_case(b"id"));
    if is_id && bytes.get(at + 2).is_none_or(|&b| !is_word_byte(b)) {
        at + 2
    } else {
        at
    }
}

fn skip_separators(bytes: &[u8], mut at: usize) -> usize {
    let limit = at + MAX_SEPARATORS;
    while at < limit && bytes.get(at).is_some_and(|&b| is_separator(b)) {
        at += 1;
    }
    at
}

fn is_separator(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b':' | b'=' | b'#' | b'"' | b'\'' | b'`' | b'{' | b'}')
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A UUID in 8-4-4-4-12 hex starting at `at`, lowercased, if it is not part
/// of a longer word or hex run.
fn uuid_at(bytes: &[u8], at: usize) -> Option<String> {
    let candidate = bytes.get(at..at + UUID_LEN)?;
    let shaped = candidate.iter().enumerate().all(|(i, &b)| match i {
        8 | 13 | 18 | 23 => b == b'-',
        _ => b.is_ascii_hexdigit(),
    });
    let ends_cleanly = bytes
        .get(at + UUID_LEN)
        .is_none_or(|&b| !(is_word_byte(b) || b == b'-'));
    if !(shaped && ends_cleanly) {
        return None;
    }
    let id: String = candidate
        .iter()
        .map(|&b| char::from(b.to_ascii_lowercase()))
        .collect();
    Some(id)
}

/// True if `text` is a canonical lowercase UUID (the form ids are stored in).
pub fn is_canonical_uuid(text: &str) -> bool {
    text.len() == UUID_LEN && uuid_at(text.as_bytes(), 0).is_some_and(|id| id == text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
    const B: &str = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d";

    #[test]
    fn finds_the_plain_form() {
        assert_eq!(
            extract_execution_ids(&format!("running, execution {A}")),
            vec![A]
        );
    }

    #[test]
    fn accepts_each_keyword_spelling() {
        for text in [
            format!("execution_id={A}"),
            format!("executionId: \"{A}\""),
            format!("Execution ID #{A}"),
            format!("{{\"execution_id\": \"{A}\"}}"),
            format!("EXECUTION `{A}`"),
            format!("{{\"execution\": {{\"id\": \"{A}\"}}}}"),
        ] {
            assert_eq!(extract_execution_ids(&text), vec![A], "{text}");
        }
    }

    #[test]
    fn lowercases_and_deduplicates_in_first_seen_order() {
        let upper = B.to_ascii_uppercase();
        let text = format!("execution {upper} then execution {A} and again execution {B}");
        assert_eq!(extract_execution_ids(&text), vec![B, A]);
    }

    #[test]
    fn ignores_near_misses() {
        for text in [
            format!("container {A}"),
            A.to_string(),
            format!("reexecution {A}"),
            format!("execution {A}0"),
            format!("execution {A}-1"),
            format!("execution {}", &A[..35]),
            format!("execution          {A}"),
            format!("execution identifier {A}"),
            "execution 00000000-0000-0000-0000-000000000000".to_string(),
            "execution 3f2504e0-4f89-11d3-9a0c-0305e82c330g".to_string(),
        ] {
            assert!(extract_execution_ids(&text).is_empty(), "{text}");
        }
    }

    #[test]
    fn stops_at_the_id_cap() {
        let text: String = (0..100)
            .map(|i| format!("execution 00000000-0000-4000-8000-{i:012x}\n"))
            .collect();
        let ids = extract_execution_ids(&text);
        assert_eq!(ids.len(), MAX_IDS);
        assert_eq!(ids[63], "00000000-0000-4000-8000-00000000003f");
    }

    #[test]
    fn canonical_form_check() {
        assert!(is_canonical_uuid(A));
        assert!(!is_canonical_uuid(&A.to_ascii_uppercase()));
        assert!(!is_canonical_uuid("not-a-uuid"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        #[test]
        fn never_panics_and_always_returns_canonical_ids(text in "(?s).{0,400}") {
            let ids = extract_execution_ids(&text);
            proptest::prop_assert!(ids.len() <= MAX_IDS);
            for id in &ids {
                proptest::prop_assert!(is_canonical_uuid(id));
            }
        }

        #[test]
        fn finds_an_id_embedded_in_noise(prefix in "[ -~]{0,80}", suffix in "[.,;)\\] \n]{1}[ -~]{0,40}") {
            let text = format!("{prefix} execution {A}{suffix}");
            let ids = extract_execution_ids(&text);
            proptest::prop_assert!(ids.contains(&A.to_string()));
        }
    }
}
