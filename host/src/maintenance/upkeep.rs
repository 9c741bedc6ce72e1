//! The start-up look at PostgreSQL's own upkeep. Every continuation
//! leaves dead row versions in the ledger and the link table; a server
//! that never vacuums them (autovacuum off, or the statistics it decides
//! from not kept) makes every poll and claim step over more of them, and
//! the engine slows to a crawl with no error anywhere. So `serve` says so
//! once, at start, naming the setting; `/metrics` carries the same facts
//! per table for the alerting rules (`docs/alerts.yml`).

use crate::store::Store;

/// What the start-up log says when `problems` keep dead tuples from being
/// vacuumed; `None` when there are none.
pub fn vacuum_warning(problems: &[String]) -> Option<String> {
    if problems.is_empty() {
        return None;
    }
    Some(format!(
        "PostgreSQL will not vacuum this store's tables: {}. Every continuation leaves dead \
         row versions behind, and without vacuum each poll and claim grows slower until \
         continuations arrive after their windows close; turn autovacuum back on, or run \
         VACUUM (ANALYZE) on the nomos_* tables often (docs/operations.md, \"The database's \
         upkeep\")",
        problems.join(", ")
    ))
}

/// Logs [`vacuum_warning`] for the store's server, once per start;
/// nothing on SQLite. A failed look is logged too: it must not stop a
/// start.
pub async fn warn_if_unvacuumed(store: &Store) {
    match store.vacuum_settings().await {
        Ok(Some(settings)) => {
            if let Some(warning) = vacuum_warning(&settings.problems()) {
                tracing::warn!("{warning}");
            }
        }
        Ok(None) => {}
        Err(e) => tracing::warn!("could not read the database's vacuum settings: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_problem_no_warning() {
        assert_eq!(vacuum_warning(&[]), None);
    }

    #[test]
    fn the_warning_names_each_setting() {
        let problems = [
            "autovacuum = off".to_owned(),
            "track_counts = off".to_owned(),
        ];
        let warning = vacuum_warning(&problems).expect("a warning");
        assert!(
            warning.contains("autovacuum = off, track_counts = off"),
            "{warning}"
        );
    }
}
