//! Finding the primary among several PostgreSQL servers, and finding it
//! again after a failover.
//!
//! Why here and not in a proxy: an operator who runs a primary and its
//! standbys already writes their addresses as libpq does
//! (`postgresql://user@h1:5432,h2:5432/db?target_session_attrs=read-write`),
//! and sqlx connects to one host. So the store keeps the candidates itself:
//!
//! - every new connection asks `pg_is_in_recovery()` and is refused on a
//!   standby, so no write ever reaches a server that is not the primary;
//! - a watch ([`Primary::follow`]) probes the current server every
//!   [`PROBE_EVERY`], and at once when a statement fails as a lost primary
//!   fails (connection errors, 25006 read-only, 57P0x shut down: see
//!   [`Primary::suspect`]); when the current server is gone or no longer
//!   the primary it tries the candidates in order, and points every pool
//!   of the store (the worker's, the requests') at the first writable one,
//!   discarding the connections opened before the switch as they come back.
//!
//! A single URL has no [`Primary`] at all: the store behaves as it always
//! did.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgConnection};
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use super::{Result, StoreError};

/// How often the current primary is asked whether it still is one, when no
/// failed statement asked first: bounds how long an idle replica takes to
/// notice a failover (a pool waiting for a dead server retries silently).
pub(crate) const PROBE_EVERY: Duration = Duration::from_secs(1);

/// How often the candidates are tried again while none is writable (the
/// old primary is gone and no standby is promoted yet).
const SEARCH_EVERY: Duration = Duration::from_millis(200);

/// How long one candidate may take to connect and answer.
const ASK_TIMEOUT: Duration = Duration::from_secs(2);

/// One server the store may use.
#[derive(Debug, Clone)]
struct Candidate {
    options: PgConnectOptions,
    /// `host:port`, for the logs (never the password).
    name: String,
}

/// The candidates, which one the pools use, and the pools.
#[derive(Debug)]
pub(crate) struct Primary {
    candidates: Vec<Candidate>,
    state: Mutex<State>,
    /// Wakes the watch at once: a statement failed as a lost primary fails.
    suspect: Notify,
    /// Counts switches, for connections held outside the pools (LISTEN).
    switches: watch::Sender<u64>,
    /// The store's primary era ([`super::Store::primary_era`]), counted
    /// up at each switch once the pools point at the new primary.
    era: Arc<AtomicU64>,
}

#[derive(Debug)]
struct State {
    current: usize,
    /// When the pools were last pointed elsewhere: connections older than
    /// that lead to the old server and are closed, not reused.
    switched_at: Option<Instant>,
    pools: Vec<PgPool>,
}

/// What one candidate answered.
enum Answer {
    Primary(PgConnection),
    Standby,
    Unreachable(String),
}

impl Primary {
    /// The candidates of `urls`: each URL's hosts in order (libpq's
    /// multi-host form `postgresql://u@h1:p1,h2:p2/db` is one URL per host),
    /// URLs in the order given. `None` for a single server.
    pub(crate) fn from_urls(urls: &[&str], era: Arc<AtomicU64>) -> Result<Option<Arc<Self>>> {
        let mut candidates = Vec::new();
        for url in urls {
            for one in split_hosts(url) {
                let options: PgConnectOptions = one.parse()?;
                let name = format!("{}:{}", options.get_host(), options.get_port());
                candidates.push(Candidate { options, name });
            }
        }
        if candidates.len() < 2 {
            return Ok(None);
        }
        Ok(Some(Arc::new(Self {
            candidates,
            state: Mutex::new(State {
                current: 0,
                switched_at: None,
                pools: Vec::new(),
            }),
            suspect: Notify::new(),
            switches: watch::Sender::new(0),
            era,
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The options of the server the pools use now.
    pub(crate) fn current_options(&self) -> PgConnectOptions {
        self.candidates[self.state().current].options.clone()
    }

    /// Finds the first writable candidate and makes it current; the error
    /// names what each answered.
    pub(crate) async fn find_first(&self) -> Result<()> {
        let (found, answers) = self.search().await;
        match found {
            Some(index) => {
                self.state().current = index;
                Ok(())
            }
            None => Err(StoreError::NoPrimary(answers.join("; "))),
        }
    }

    /// Pool options that refuse a standby and drop connections opened
    /// before the last switch; the pool built from them is pointed at each
    /// new primary ([`Self::adopt`]).
    pub(crate) fn pool_options(self: &Arc<Self>) -> PgPoolOptions {
        let on_connect = Arc::downgrade(self);
        let on_acquire = Arc::downgrade(self);
        let on_release = Arc::downgrade(self);
        PgPoolOptions::new()
            .after_connect(move |conn, _| {
                let primary = on_connect.clone();
                Box::pin(async move {
                    let in_recovery: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
                        .fetch_one(&mut *conn)
                        .await?;
                    if in_recovery {
                        if let Some(primary) = primary.upgrade() {
                            primary.suspect.notify_one();
                        }
                        return Err(sqlx::Error::Protocol(
                            "refused: the server is a standby (in recovery), not the primary"
                                .into(),
                        ));
                    }
                    Ok(())
                })
            })
            .before_acquire(move |_, meta| {
                let fresh = since_switch(&on_acquire, meta.age);
                Box::pin(async move { Ok(fresh) })
            })
            .after_release(move |_, meta| {
                let fresh = since_switch(&on_release, meta.age);
                Box::pin(async move { Ok(fresh) })
            })
    }

    /// Keeps `pool` pointed at the primary from now on.
    pub(crate) fn adopt(&self, pool: &PgPool) {
        self.state().pools.push(pool.clone());
    }

    /// A receiver that changes at every switch of primary.
    pub(crate) fn switches(&self) -> watch::Receiver<u64> {
        self.switches.subscribe()
    }

    /// Wakes the watch if `error` is how a lost or demoted primary fails:
    /// the connection broke or was refused, the server is shutting down
    /// (57P01-57P03), or it is read-only (25006: a standby).
    pub(crate) fn suspect(&self, error: &sqlx::Error) {
        let lost = match error {
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Protocol(_) => true,
            sqlx::Error::Database(db) => {
                let code = db.code().unwrap_or_default();
                code == "25006" || code.starts_with("57P0") || code.starts_with("08")
            }
            _ => false,
        };
        if lost {
            self.suspect.notify_one();
        }
    }

    /// Watches the primary until `shutdown`: probes the current server every
    /// [`PROBE_EVERY`] (or at once when a statement failed as a lost
    /// primary fails) and, when it is gone or a standby, tries the
    /// candidates in order until one is writable, then switches to it.
    pub(crate) async fn follow(&self, shutdown: CancellationToken) {
        let mut probe: Option<PgConnection> = None;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = self.suspect.notified() => {}
                () = tokio::time::sleep(PROBE_EVERY) => {}
            }
            if self.still_primary(&mut probe).await {
                continue;
            }
            let mut told = false;
            loop {
                let (found, answers) = self.search().await;
                if let Some(index) = found {
                    self.switch_to(index);
                    break;
                }
                if !told {
                    tracing::warn!(
                        "no writable database primary among the candidates ({}); trying again",
                        answers.join("; ")
                    );
                    told = true;
                }
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(SEARCH_EVERY) => {}
                }
            }
        }
    }

    /// Whether the current server still answers as a primary, on the
    /// probe's own connection (opened again when it was lost).
    async fn still_primary(&self, probe: &mut Option<PgConnection>) -> bool {
        if probe.is_none() {
            match ask(&self.current_options()).await {
                Answer::Primary(conn) => *probe = Some(conn),
                Answer::Standby | Answer::Unreachable(_) => return false,
            }
            return true;
        }
        let Some(conn) = probe.as_mut() else {
            return false;
        };
        let asked = tokio::time::timeout(
            ASK_TIMEOUT,
            sqlx::query_scalar::<_, bool>("SELECT pg_is_in_recovery()").fetch_one(conn),
        )
        .await;
        if matches!(asked, Ok(Ok(false))) {
            return true;
        }
        *probe = None;
        false
    }

    /// Asks each candidate in order; the first writable one, and what each
    /// asked answered.
    async fn search(&self) -> (Option<usize>, Vec<String>) {
        let mut answers = Vec::new();
        for (index, candidate) in self.candidates.iter().enumerate() {
            match ask(&candidate.options).await {
                Answer::Primary(conn) => {
                    let _ = conn.close().await;
                    return (Some(index), answers);
                }
                Answer::Standby => answers.push(format!("{}: a standby", candidate.name)),
                Answer::Unreachable(e) => answers.push(format!("{}: {e}", candidate.name)),
            }
        }
        (None, answers)
    }

    /// Points every pool at candidate `index` (logged once per switch).
    fn switch_to(&self, index: usize) {
        let mut state = self.state();
        if state.current == index {
            return;
        }
        let was = &self.candidates[state.current].name;
        let now = &self.candidates[index].name;
        tracing::warn!("database primary is now {now}, was {was}");
        state.current = index;
        state.switched_at = Some(Instant::now());
        for pool in &state.pools {
            pool.set_connect_options(self.candidates[index].options.clone());
        }
        drop(state);
        // After the pools point at the new server: whoever reads the new
        // era from now on gets connections to it (older ones are closed as
        // they come back), so only work of the old era can be on the old.
        self.era.fetch_add(1, Ordering::SeqCst);
        self.switches.send_modify(|n| *n += 1);
    }
}

/// Whether a connection of age `age` was opened after the last switch (so
/// leads to the current primary).
fn since_switch(primary: &Weak<Primary>, age: Duration) -> bool {
    let Some(primary) = primary.upgrade() else {
        return true;
    };
    let switched_at = primary.state().switched_at;
    switched_at.is_none_or(|at| age < at.elapsed())
}

/// Connects to one server and asks whether it is in recovery.
async fn ask(options: &PgConnectOptions) -> Answer {
    let asked = tokio::time::timeout(ASK_TIMEOUT, async {
        let mut conn = options.connect().await?;
        let in_recovery: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
            .fetch_one(&mut conn)
            .await?;
        Ok::<_, sqlx::Error>((conn, in_recovery))
    })
    .await;
    match asked {
        Ok(Ok((conn, false))) => Answer::Primary(conn),
        Ok(Ok((conn, true))) => {
            let _ = conn.close().await;
            Answer::Standby
        }
        Ok(Err(e)) => Answer::Unreachable(e.to_string()),
        Err(_) => Answer::Unreachable(format!("no answer within {ASK_TIMEOUT:?}")),
    }
}

/// One URL per host of libpq's multi-host form
/// (`scheme://[user[:password]@]h1[:p1],h2[:p2][/db][?params]`), each with
/// the same user, database and parameters; libpq's
/// `target_session_attrs` is left out (the store always looks for the
/// primary when it has several candidates). A URL with one host comes back
/// as it is, but for that parameter.
pub(crate) fn split_hosts(url: &str) -> Vec<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return vec![url.to_owned()];
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let tail = without_param(tail, "target_session_attrs");
    let (user, hosts) = match authority.rsplit_once('@') {
        Some((user, hosts)) => (format!("{user}@"), hosts),
        None => (String::new(), authority),
    };
    hosts
        .split(',')
        .map(|host| format!("{scheme}://{user}{host}{tail}"))
        .collect()
}

/// `tail` (`/db?a=1&b=2`) without the query parameter `name`.
fn without_param(tail: &str, name: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_owned();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| pair.split('=').next() != Some(name))
        .collect();
    if kept.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::split_hosts;

    #[test]
    fn a_multi_host_url_is_one_url_per_host() {
        assert_eq!(
            split_hosts(
                "postgresql://app:pw@h1:5432,h2:5433/nomos?target_session_attrs=read-write&sslmode=require"
            ),
            vec![
                "postgresql://app:pw@h1:5432/nomos?sslmode=require",
                "postgresql://app:pw@h2:5433/nomos?sslmode=require",
            ]
        );
        assert_eq!(
            split_hosts("postgres://h1,h2?target_session_attrs=primary"),
            vec!["postgres://h1", "postgres://h2"]
        );
        assert_eq!(
            split_hosts("postgres://u@[::1]:5432/db"),
            vec!["postgres://u@[::1]:5432/db"]
        );
    }
}
