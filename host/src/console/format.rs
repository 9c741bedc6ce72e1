//! How the console writes what it shows: times and windows in one form
//! everywhere (so a timeline reads in order), revisions shortened, and a
//! template turned into a fragment or an error.
//!
//! A time on a view is a [`Moment`]: its age ("3 min ago", "in 12 min")
//! as text, readable without the script, inside a `<time>` whose
//! `datetime` and `title` (shown on hover) are the exact UTC time. The
//! page's script writes the ages again as time passes, in the same words
//! ([`age`] and `console.js`'s `age` must agree), against the server's
//! clock (the [`NOW_HEADER`] of each fragment), not the browser's.

use std::fmt;

use askama::filters::HtmlSafe;
use axum::response::Html;
use chrono::{DateTime, SecondsFormat, Utc};

use crate::api::ApiError;
use crate::store::Window;

/// A time to the millisecond, in UTC.
pub fn at(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S%.3fZ").to_string()
}

/// The header each fragment carries with the server's clock at the
/// time it was rendered (RFC 3339, milliseconds), so that the script ages
/// times against the clock that rendered them.
pub const NOW_HEADER: &str = "x-console-now";

/// The time `t` is from `now`, in the console's words: "now" within a
/// second, then seconds, minutes, hours, and days past two days; "… ago"
/// in the past, "in …" in the future. Counted in whole units, rounded
/// down.
pub fn age(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let ms = (t - now).num_milliseconds();
    let s = ms.unsigned_abs() / 1000;
    let span = match s {
        0 => return "now".into(),
        1..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..172_800 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    };
    if ms < 0 {
        format!("{span} ago")
    } else {
        format!("in {span}")
    }
}

/// A time as a view shows it (see the module docs); nothing for `None`.
/// Written into a template as it is: it escapes nothing because it holds
/// no text but digits and the words of [`age`].
#[derive(Clone, Copy)]
pub struct Moment {
    at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
}

impl Moment {
    /// `t`, aged at `now`.
    pub fn new(t: DateTime<Utc>, now: DateTime<Utc>) -> Moment {
        Moment { at: Some(t), now }
    }

    /// `t` if there is one; an empty cell otherwise.
    pub fn maybe(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Moment {
        Moment { at: t, now }
    }
}

impl fmt::Display for Moment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(t) = self.at else { return Ok(()) };
        write!(
            f,
            r#"<time datetime="{}" title="{} UTC">{}</time>"#,
            t.to_rfc3339_opts(SecondsFormat::Millis, true),
            t.format("%Y-%m-%d %H:%M:%S%.3f"),
            age(t, self.now)
        )
    }
}

impl HtmlSafe for Moment {}

/// A window's state as a view shows it: a phrase with a [`Moment`] in it.
#[derive(Clone, Copy)]
pub struct WindowPhrase {
    words: &'static str,
    at: Option<Moment>,
}

impl fmt::Display for WindowPhrase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some(at) => write!(f, "{} {at}", self.words),
            None => f.write_str(self.words),
        }
    }
}

impl HtmlSafe for WindowPhrase {}

/// A window's state at `now`, as a CSS class and a phrase.
pub fn window_state(window: Option<&Window>, now: DateTime<Utc>) -> (&'static str, WindowPhrase) {
    let phrase = |words, t| WindowPhrase {
        words,
        at: Some(Moment::new(t, now)),
    };
    match window {
        None => (
            "none",
            WindowPhrase {
                words: "never approved",
                at: None,
            },
        ),
        Some(w) => match w.closed_at {
            Some(closed) => ("closed", phrase("denied", closed)),
            None if w.is_open_at(now) => ("open", phrase("open, closes", w.expires_at)),
            None => ("closed", phrase("expired", w.expires_at)),
        },
    }
}

/// Renders a template into a fragment; a template that fails to render is
/// a bug, answered as a 500 with its message.
pub fn render(template: &impl askama::Template) -> Result<Html<String>, ApiError> {
    template
        .render()
        .map(Html)
        .map_err(|e| ApiError::Internal(format!("console template: {e}")))
}

/// A duration in seconds as an operator reads it: `45 s`, `12 min`,
/// `3 h 5 min`, `2 d 4 h`.
pub fn span(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=86_399 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// `text` without terminal escape sequences (colours, cursor moves, window
/// titles): a tool's output is often written for a terminal, and the raw
/// `ESC[31m` would only hide the words. CSI (`ESC [` … a final byte), OSC
/// (`ESC ]` … BEL or `ESC \`) and two-byte escapes are removed, as are the
/// other control characters but newline and tab.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    // Parameters and intermediates, then one final byte.
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
                    // Intermediates (a character set's `ESC ( B`), then a final byte.
                    for c in chars.by_ref() {
                        if !('\u{20}'..='\u{2f}').contains(&c) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\u{9b}' => {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            '\n' | '\t' => out.push(c),
            '\r' => {
                // A lone carriage return redraws a line: keep the break.
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Lines of a long output shown at each end.
pub const END_LINES: usize = 20;

/// A long output as the timeline shows it: its first and last
/// [`END_LINES`] lines, and what lies between them (where a failed run's
/// last line, the error, is never cut off).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// The first lines.
    pub head: String,
    /// What was left out between them, in words; empty when nothing was.
    pub gap: String,
    /// The last lines; empty when the head holds it all.
    pub tail: String,
}

impl Output {
    /// From the text the store read: `head` (its start), `tail` (its end,
    /// after the head), `left_out` characters between them unread, and the
    /// whole text's `lines`. Escapes are removed first.
    pub fn of(head: &str, tail: &str, left_out: i64, lines: i64) -> Self {
        let (head, tail) = (plain(head), plain(tail));
        let keep = |text: &str, first: bool| -> (String, usize) {
            let all: Vec<&str> = text.split('\n').collect();
            let n = all.len().min(END_LINES);
            let part = if first {
                &all[..n]
            } else {
                &all[all.len() - n..]
            };
            (part.join("\n"), n)
        };
        if left_out == 0 {
            let whole = format!("{head}{tail}");
            let count = whole.split('\n').count();
            if count <= 2 * END_LINES {
                return Self {
                    head: whole,
                    ..Self::default()
                };
            }
            let (first, _) = keep(&whole, true);
            let (last, _) = keep(&whole, false);
            return Self {
                head: first,
                gap: format!("… {} lines …", count - 2 * END_LINES),
                tail: last,
            };
        }
        let (first, shown_head) = keep(&head, true);
        let (last, shown_tail) = keep(&tail, false);
        let between = (lines - (shown_head + shown_tail) as i64).max(0);
        let unread = left_out
            + (head.chars().count() - first.chars().count()) as i64
            + (tail.chars().count() - last.chars().count()) as i64;
        Self {
            head: first,
            gap: format!("… {between} lines ({unread} characters) …"),
            tail: last,
        }
    }
}

/// The first 12 characters of a revision's hash, as the CLI shows it.
pub fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_removed_and_the_words_kept() {
        let coloured = "\u{1b}[1;31merror\u{1b}[0m: \u{1b}]0;title\u{7}disk full\r\ndone\u{1b}(B";
        assert_eq!(plain(coloured), "error: disk full\ndone");
        assert_eq!(plain("50%\r100%"), "50%\n100%");
        assert_eq!(plain("tab\there"), "tab\there");
    }

    #[test]
    fn a_long_output_keeps_its_first_and_last_lines() {
        let text: String = (1..=100).map(|n| format!("line {n}\n")).collect();
        let text = text.trim_end();
        let shown = Output::of(text, "", 0, 100);
        assert!(shown.head.starts_with("line 1\n") && shown.head.ends_with("line 20"));
        assert_eq!(shown.gap, "… 60 lines …");
        assert!(shown.tail.starts_with("line 81\n") && shown.tail.ends_with("line 100"));
        let short = Output::of("a\nb", "", 0, 2);
        assert_eq!((short.head.as_str(), short.gap.as_str()), ("a\nb", ""));
        // Cut by the store: the end is read apart from the start.
        let cut = Output::of("one\ntwo\n", "\nError: exit 1", 5000, 900);
        assert_eq!(cut.head, "one\ntwo\n");
        assert!(cut.tail.ends_with("Error: exit 1"));
        assert!(
            cut.gap.starts_with("… 895 lines (5000 characters)"),
            "{}",
            cut.gap
        );
    }

    #[test]
    fn ages_read_in_the_largest_units() {
        assert_eq!(span(-3), "0 s");
        assert_eq!(span(59), "59 s");
        assert_eq!(span(600), "10 min");
        assert_eq!(span(3 * 3600 + 300), "3 h 5 min");
        assert_eq!(span(2 * 86_400 + 4 * 3600), "2 d 4 h");
    }

    #[test]
    fn a_revision_is_shown_by_its_first_twelve_characters() {
        assert_eq!(short("0123456789abcdef"), "0123456789ab");
        assert_eq!(short("abc"), "abc");
    }

    #[test]
    fn a_window_reads_open_denied_or_expired_at_the_time_given() {
        let t = |s: &str| s.parse::<DateTime<Utc>>().expect("a time");
        let mut window = Window {
            session_id: uuid::Uuid::nil(),
            opened_at: t("2026-12-01T04:00:00Z"),
            expires_at: t("2026-12-01T04:30:00Z"),
            route: crate::store::Route::Button,
            continuations: 0,
            closed_at: None,
            updated_at: t("2026-12-01T04:00:00Z"),
        };
        let at_ = |w: &Window, now| {
            let (class, phrase) = window_state(Some(w), t(now));
            (class, phrase.to_string())
        };
        let time = |iso: &str, title: &str, age: &str| {
            format!(r#"<time datetime="{iso}" title="{title} UTC">{age}</time>"#)
        };
        let expires = ("2026-12-01T04:30:00.000Z", "2026-12-01 04:30:00.000");
        assert_eq!(
            at_(&window, "2026-12-01T04:10:00Z"),
            (
                "open",
                format!("open, closes {}", time(expires.0, expires.1, "in 20 min"))
            )
        );
        assert_eq!(
            at_(&window, "2026-12-01T04:30:00Z"),
            (
                "closed",
                format!("expired {}", time(expires.0, expires.1, "now"))
            )
        );
        window.closed_at = Some(t("2026-12-01T04:05:00Z"));
        let denied = time(
            "2026-12-01T04:05:00.000Z",
            "2026-12-01 04:05:00.000",
            "5 min ago",
        );
        assert_eq!(
            at_(&window, "2026-12-01T04:10:00Z"),
            ("closed", format!("denied {denied}"))
        );
        assert_eq!(window_state(None, t("2026-12-01T04:10:00Z")).0, "none");
        assert_eq!(
            Moment::maybe(None, t("2026-12-01T04:10:00Z")).to_string(),
            ""
        );
    }

    #[test]
    fn an_age_is_counted_in_whole_units_before_or_after_now() {
        let now = "2026-12-01T04:00:00Z"
            .parse::<DateTime<Utc>>()
            .expect("a time");
        let cases = [
            (0, "now"),
            (-999, "now"),
            (999, "now"),
            (-1_000, "1 s ago"),
            (59_999, "in 59 s"),
            (-60_000, "1 min ago"),
            (12 * 60_000 + 59_000, "in 12 min"),
            (-3_600_000, "1 h ago"),
            (47 * 3_600_000, "in 47 h"),
            (-48 * 3_600_000, "2 days ago"),
            (10 * 86_400_000, "in 10 days"),
        ];
        for (ms, words) in cases {
            let t = now + chrono::Duration::milliseconds(ms);
            assert_eq!(age(t, now), words, "{ms} ms");
        }
    }
}
