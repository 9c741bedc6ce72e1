//! The result text a note carries for a protocol task: gathered from the
//! protocol's pieces, and bounded like a status report's result.
//!
//! Why cut rather than refuse: a status report that is too long is the
//! runtime's to shorten (a 413), but a remote agent's push cannot be
//! re-sent shorter, and refusing it would lose the task's end. So the text
//! is cut on a character boundary and says so.

use super::a2a::Artifact;

/// What a cut text ends with; `{kept}` and `{total}` are byte counts.
fn cut_marker(kept: usize, total: usize) -> String {
    format!("\n[cut: the first {kept} of {total} bytes]")
}

/// `text`, or its first bytes (on a character boundary) and a line saying
/// it was cut, so that the whole is at most `max` bytes.
pub fn capped(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let total = text.len();
    // The marker's length depends on the kept count's digits: measure it
    // with the largest count it can name.
    let room = max.saturating_sub(cut_marker(max, total).len());
    let mut kept = room.min(total);
    while !text.is_char_boundary(kept) {
        kept -= 1;
    }
    let marker = cut_marker(kept, total);
    if marker.len() > max {
        // Not even the marker fits: the bare start, still on a boundary.
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        return text[..end].to_owned();
    }
    format!("{}{marker}", &text[..kept])
}

/// The result of an A2A task: its status message, then each artifact's
/// text, blank pieces left out, one per line; capped at `max` bytes.
pub fn a2a_result(message: &str, artifacts: &[Artifact], max: usize) -> String {
    let pieces: Vec<&str> = std::iter::once(message)
        .chain(artifacts.iter().map(|a| a.text.as_str()))
        .filter(|p| !p.trim().is_empty())
        .collect();
    capped(&pieces.join("\n"), max)
}

/// The artifacts gathered so far with `update`'s applied: an artifact
/// replaces the one of its id, or extends it when it says `append`, or is
/// added. A whole task's artifacts replace (never extend) those of their
/// ids, and none is removed: pushes arrive unordered, and an older whole
/// task, retried late, must not take back what a newer one brought.
pub fn gather(mut kept: Vec<Artifact>, update: &[Artifact], whole_task: bool) -> Vec<Artifact> {
    for artifact in update {
        match kept.iter_mut().find(|k| k.id == artifact.id) {
            Some(k) if artifact.append && !whole_task => {
                if !k.text.is_empty() && !artifact.text.is_empty() {
                    k.text.push('\n');
                }
                k.text.push_str(&artifact.text);
                k.last_chunk = artifact.last_chunk;
            }
            Some(k) => *k = artifact.clone(),
            None => kept.push(artifact.clone()),
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(id: &str, text: &str, append: bool) -> Artifact {
        Artifact {
            id: id.into(),
            append,
            last_chunk: false,
            text: text.into(),
        }
    }

    #[test]
    fn short_text_is_kept_whole() {
        assert_eq!(capped("abc", 3), "abc");
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary_and_says_so() {
        let text = "é".repeat(100); // 200 bytes
        let out = capped(&text, 80);
        assert!(out.len() <= 80, "{} bytes", out.len());
        assert!(out.contains("[cut: the first"), "{out}");
        assert!(out.ends_with("of 200 bytes]"), "{out}");
        let kept = out.split('\n').next().expect("the kept start");
        assert!(kept.chars().all(|c| c == 'é'));
        assert!(!kept.is_empty());
    }

    #[test]
    fn a_limit_below_the_marker_keeps_a_bare_start() {
        assert_eq!(capped("ééé", 3), "é");
    }

    #[test]
    fn a2a_result_joins_message_and_artifacts() {
        let artifacts = [artifact("a", "one", false), artifact("b", " ", false)];
        assert_eq!(
            a2a_result("failed hard", &artifacts, 100),
            "failed hard\none"
        );
        assert_eq!(a2a_result("", &artifacts, 100), "one");
    }

    #[test]
    fn gather_appends_replaces_and_adds() {
        let kept = gather(Vec::new(), &[artifact("a", "one", false)], false);
        let kept = gather(kept, &[artifact("a", "two", true)], false);
        assert_eq!(kept[0].text, "one\ntwo");
        let kept = gather(kept, &[artifact("b", "new", false)], false);
        let kept = gather(kept, &[artifact("a", "again", false)], false);
        assert_eq!(
            kept.iter().map(|a| a.text.as_str()).collect::<Vec<_>>(),
            ["again", "new"]
        );
        // A whole task replaces by id, never appends, and removes nothing.
        let whole = gather(kept.clone(), &[artifact("b", "whole", true)], true);
        assert_eq!(
            whole.iter().map(|a| a.text.as_str()).collect::<Vec<_>>(),
            ["again", "whole"]
        );
        assert_eq!(gather(kept.clone(), &[], true), kept);
    }
}
