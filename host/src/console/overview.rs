//! The overview strip above the sessions: the numbers of
//! `store::read::pulse` as tiles, and the continuations of the last 24
//! hours as bars drawn on the server (an SVG with a text alternative, no
//! script), so a phone shows it as a desktop does.

use super::format::{at, span};
use crate::store::{Pulse, CHART_HOURS, PICKUP_WINDOW, RECENT};

/// Height of the chart's tallest bar, in SVG units.
const CHART_HEIGHT: i64 = 40;
/// Width of one hour's bar and its gap, in SVG units.
const BAR: i64 = 10;

/// One hour's bar.
pub(super) struct Bar {
    pub(super) x: i64,
    pub(super) y: i64,
    pub(super) height: i64,
    pub(super) label: String,
}

/// One tile: a number, what it counts, and where to look next.
pub(super) struct Tile {
    pub(super) name: &'static str,
    pub(super) label: String,
    pub(super) value: String,
    pub(super) note: String,
    pub(super) href: Option<&'static str>,
    pub(super) bad: bool,
}

/// The strip as the template shows it.
pub(super) struct Strip {
    pub(super) at: String,
    pub(super) tiles: Vec<Tile>,
    pub(super) bars: Vec<Bar>,
    pub(super) chart_width: i64,
    pub(super) chart_height: i64,
    /// The chart in words: its text alternative.
    pub(super) chart_text: String,
    /// Notices that reached no one (neither the agent nor the operator's
    /// channel took them): above 0, a banner no one can miss.
    pub(super) undelivered: i64,
}

fn millis(ms: Option<i64>) -> String {
    match ms {
        None => "–".into(),
        Some(ms) if ms < 1000 => format!("{ms} ms"),
        Some(ms) if ms < 60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        Some(ms) => span(ms / 1000),
    }
}

impl Strip {
    /// The tiles across the top: what is in flight and what went wrong.
    fn tiles(p: &Pulse) -> Vec<Tile> {
        let recent = format!("last {} h", RECENT.num_hours());
        let oldest = match p.oldest_in_flight_since {
            Some(t) => format!("oldest linked {} ago", span((p.at - t).num_seconds())),
            None => "none running".into(),
        };
        vec![
            Tile {
                name: "in-flight",
                label: "in flight".into(),
                value: p.in_flight.to_string(),
                note: oldest,
                href: Some("#/sessions?filter=in-flight"),
                bad: false,
            },
            Tile {
                name: "pending",
                label: "pending deliveries".into(),
                value: p.pending_deliveries.to_string(),
                note: "waiting or retrying".into(),
                href: None,
                bad: false,
            },
            Tile {
                name: "failed",
                label: "failed deliveries".into(),
                value: p.failed_deliveries.to_string(),
                note: recent.clone(),
                href: Some("#/sessions?status=delivery-failed"),
                bad: p.failed_deliveries > 0,
            },
            Tile {
                name: "dropped",
                label: "drops".into(),
                value: p.dropped.to_string(),
                note: format!("executions, {recent}"),
                href: Some("#/sessions?status=dropped"),
                bad: p.dropped > 0,
            },
            Tile {
                name: "undelivered",
                label: "notices that reached no one".into(),
                value: p.undelivered_notices.to_string(),
                note: "ever: the agent's and the operator's channel both gave up".into(),
                href: Some("#/sessions?filter=notices"),
                bad: p.undelivered_notices > 0,
            },
            Tile {
                name: "rate",
                label: "continuations per hour".into(),
                value: p.continuations_last_hour().to_string(),
                note: "last hour".into(),
                href: None,
                bad: false,
            },
            Tile {
                name: "pickup",
                label: "pickup p50 / p99".into(),
                value: format!("{} / {}", millis(p.pickup_p50_ms), millis(p.pickup_p99_ms)),
                note: format!(
                    "finish → delivered, {} executions, last {} min",
                    p.pickups,
                    PICKUP_WINDOW.num_minutes()
                ),
                href: None,
                bad: false,
            },
        ]
    }

    /// One bar per hour of the chart, each at least a sliver if not empty.
    fn bars(p: &Pulse) -> Vec<Bar> {
        let most = p.continuations_by_hour.iter().copied().max().unwrap_or(0);
        let hours = p.continuations_by_hour.len() as i64;
        p.continuations_by_hour
            .iter()
            .enumerate()
            .map(|(n, &count)| {
                let height = if most == 0 {
                    0
                } else {
                    // A non-empty hour is at least a sliver, so it shows.
                    (count * CHART_HEIGHT / most).max(i64::from(count > 0))
                };
                let ago = hours - n as i64;
                Bar {
                    x: n as i64 * BAR,
                    y: CHART_HEIGHT - height,
                    height,
                    label: match ago {
                        1 => format!("{count} in the last hour"),
                        _ => format!("{count} between {ago} and {} hours ago", ago - 1),
                    },
                }
            })
            .collect()
    }

    pub(super) fn of(p: Pulse) -> Self {
        let tiles = Self::tiles(&p);
        let bars = Self::bars(&p);
        let most = p.continuations_by_hour.iter().copied().max().unwrap_or(0);
        let hours = p.continuations_by_hour.len() as i64;
        let total: i64 = p.continuations_by_hour.iter().sum();
        let chart_text = format!(
            "Continuations delivered per hour over the last {CHART_HOURS} hours, oldest first: \
             {} ({total} in all, at most {most} in an hour).",
            p.continuations_by_hour
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        Self {
            undelivered: p.undelivered_notices,
            at: at(p.at),
            tiles,
            bars,
            chart_width: hours * BAR,
            chart_height: CHART_HEIGHT,
            chart_text,
        }
    }
}
