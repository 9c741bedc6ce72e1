//! Worker registrations: at most one live process per worker id.
//!
//! Leases name their holder by worker id, so two processes started with the
//! same `--worker-id` would each renew, mark and release the other's leases
//! as their own, silently. Each process registers its id with a random
//! instance id at start-up and keeps the registration's heartbeat fresh; a
//! second process finds the live registration of another instance and
//! refuses to start. A registration whose heartbeat is older than the
//! staleness limit belongs to a process that died without unregistering
//! (SIGKILL, a lost machine), and is taken over.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use super::decode::RowExt;
use super::dialect::{query, trunc};
use super::types::Registration;
use super::{Result, Store};

impl Store {
    /// Registers `instance` (one process) as the holder of `worker_id`.
    ///
    /// Atomic: inserts the registration, or takes it over when it is ours
    /// already or its heartbeat is older than `now - stale_after`; otherwise
    /// leaves it and answers [`Registration::Duplicate`] with the live
    /// holder's last heartbeat (a refusal is a value, not an error).
    pub async fn register_worker(
        &self,
        worker_id: &str,
        instance: Uuid,
        now: DateTime<Utc>,
        stale_after: Duration,
    ) -> Result<Registration> {
        let now = trunc(now);
        let stale_before = now - stale_after;
        let mut tx = self.begin().await?;
        let taken = query(
            "INSERT INTO nomos_workers AS w (worker_id, instance, heartbeat_at, started_at) \
             VALUES ($1, $2, $3, $3) \
             ON CONFLICT (worker_id) DO UPDATE SET \
               instance = EXCLUDED.instance, heartbeat_at = EXCLUDED.heartbeat_at, \
               started_at = CASE WHEN w.instance = EXCLUDED.instance \
                 THEN w.started_at ELSE EXCLUDED.started_at END \
             WHERE w.instance = EXCLUDED.instance OR w.heartbeat_at < $4",
        )
        .bind(worker_id)
        .bind(instance)
        .bind(now)
        .bind(stale_before)
        .execute(&mut tx)
        .await?;
        // A refused upsert keeps the conflicting row locked (on SQLite, the
        // whole file), so the holder read here is the one that refused us.
        let held = if taken == 1 {
            None
        } else {
            let row = query("SELECT heartbeat_at FROM nomos_workers WHERE worker_id = $1")
                .bind(worker_id)
                .fetch_one(&mut tx)
                .await?;
            Some(row.time("heartbeat_at")?)
        };
        tx.commit().await?;
        Ok(match held {
            None => Registration::Registered,
            Some(heartbeat_at) => Registration::Duplicate { heartbeat_at },
        })
    }

    /// Refreshes the heartbeat of `instance`'s registration of `worker_id`
    /// (re-creating it if it was removed). Returns `false` when another
    /// instance holds the id: this process's registration went stale (its
    /// heartbeats did not reach the database in time) and was taken over,
    /// so two processes now run under one id and this one should stop.
    pub async fn worker_heartbeat(
        &self,
        worker_id: &str,
        instance: Uuid,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let n = query(
            "INSERT INTO nomos_workers AS w (worker_id, instance, heartbeat_at, started_at) \
             VALUES ($1, $2, $3, $3) \
             ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at \
             WHERE w.instance = EXCLUDED.instance",
        )
        .bind(worker_id)
        .bind(instance)
        .bind(trunc(now))
        .execute(self)
        .await?;
        Ok(n == 1)
    }

    /// Removes `instance`'s registration of `worker_id` (graceful shutdown),
    /// so the id can be used again at once. Leaves another instance's
    /// registration alone; returns whether one was removed.
    pub async fn unregister_worker(&self, worker_id: &str, instance: Uuid) -> Result<bool> {
        let n = query("DELETE FROM nomos_workers WHERE worker_id = $1 AND instance = $2")
            .bind(worker_id)
            .bind(instance)
            .execute(self)
            .await?;
        Ok(n == 1)
    }
}
