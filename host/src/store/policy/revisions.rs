//! Continuation policy revisions and the active one.

use chrono::{DateTime, Utc};

use crate::store::decode::RowExt;
use crate::store::dialect::{query, trunc, Tx};
use crate::store::types::{ActivePolicy, PolicyHead, PolicyRevision};
use crate::store::{Result, Store, StoreError};

impl Store {
    /// Stores a policy revision (validated by the caller beforehand).
    ///
    /// `hash` is the revision id the caller computed from `wasm` (the
    /// policy deployment, with the sandbox's one hash of a component): the
    /// store keeps rows and does not hash components again. Saving the same
    /// bytes again is a no-op; returns whether a new row was written. Saving
    /// does not activate: see [`Store::activate_policy`].
    pub async fn save_policy_revision(
        &self,
        hash: &str,
        wasm: &[u8],
        name: &str,
        version: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let n = query(
            "INSERT INTO nomos_policy_revisions (hash, wasm, name, version, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (hash) DO NOTHING",
        )
        .bind(hash)
        .bind(wasm)
        .bind(name)
        .bind(version)
        .bind(trunc(now))
        .execute(self)
        .await?;
        Ok(n == 1)
    }

    /// Records the signature a saved revision came with: `signature` is the
    /// signature line as given, `key_id` the key it names. The store keeps
    /// them and checks nothing (verifying is the deployment's job, on every
    /// activation); a later signature replaces an earlier one, so a
    /// revision re-signed under a new key (a key rotation) is uploaded
    /// again to record it. Returns whether the revision was found.
    pub async fn record_policy_signature(
        &self,
        hash: &str,
        key_id: &str,
        signature: &str,
    ) -> Result<bool> {
        let n =
            query("UPDATE nomos_policy_revisions SET key_id = $1, signature = $2 WHERE hash = $3")
                .bind(key_id)
                .bind(signature)
                .bind(hash)
                .execute(self)
                .await?;
        Ok(n == 1)
    }

    /// Makes a saved revision the active one for every replica (they poll
    /// [`Store::active_policy`] and converge), and records the activation.
    /// [`StoreError::UnknownPolicy`] if it was never saved; one
    /// transaction, so the active row always names a stored revision and
    /// the activation log never misses a change.
    pub async fn activate_policy(&self, hash: &str, now: DateTime<Utc>) -> Result<()> {
        let mut tx = self.begin().await?;
        activate_in(&mut tx, hash, now).await?;
        tx.commit().await
    }

    /// Activates `hash` only while `expected` is still the active revision
    /// (a compare-and-set): a rollback decided against one revision must
    /// not undo an upload that landed in between. `Ok(false)` when the
    /// active revision has changed.
    pub async fn replace_active_policy(
        &self,
        expected: &str,
        hash: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let mut tx = self.begin().await?;
        let active = query(format!(
            "SELECT hash FROM nomos_policy_active WHERE id = 1{}",
            tx.backend().lock(" FOR UPDATE")
        ))
        .fetch_optional(&mut tx)
        .await?;
        let current = active.map(|r| r.text("hash")).transpose()?;
        if current.as_deref() != Some(expected) {
            return Ok(false);
        }
        activate_in(&mut tx, hash, now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// The revision a rollback returns to, with the one active now: the
    /// most recently activated revision other than the active one. So a
    /// rollback undoes the last change, and a second rollback undoes the
    /// rollback. `None` when nothing is active or nothing else ever was.
    pub async fn rollback_target(&self) -> Result<Option<(String, ActivePolicy)>> {
        const SQL: &str = "SELECT r.hash, r.wasm, r.name, r.version, r.signature, \
             l.activated_at FROM nomos_policy_active a \
             JOIN nomos_policy_activations l ON l.hash <> a.hash \
             JOIN nomos_policy_revisions r ON r.hash = l.hash \
             WHERE a.id = 1 ORDER BY l.id DESC LIMIT 1";
        let Some(active) = self.active_policy().await? else {
            return Ok(None);
        };
        let row = query(SQL).fetch_optional(self).await?;
        row.map(|r| Ok((active.hash.clone(), active_policy(&r)?)))
            .transpose()
    }

    /// The active revision with its bytes; `None` until one is activated (the
    /// host then runs its built-in policy).
    pub async fn active_policy(&self) -> Result<Option<ActivePolicy>> {
        const SQL: &str = "SELECT r.hash, r.wasm, r.name, r.version, r.signature, \
             a.activated_at FROM nomos_policy_active a JOIN nomos_policy_revisions r ON r.hash = a.hash \
             WHERE a.id = 1";
        let row = query(SQL).fetch_optional(self).await?;
        row.map(|r| active_policy(&r)).transpose()
    }

    /// The active revision's hash and signature, without its bytes; `None`
    /// until one is activated.
    pub async fn active_policy_head(&self) -> Result<Option<PolicyHead>> {
        const SQL: &str = "SELECT r.hash, r.signature FROM nomos_policy_active a \
             JOIN nomos_policy_revisions r ON r.hash = a.hash WHERE a.id = 1";
        let row = query(SQL).fetch_optional(self).await?;
        row.map(|r| policy_head(&r)).transpose()
    }

    /// Every stored revision without its bytes, newest first (for the API
    /// and `policy` CLI).
    pub async fn policy_revisions(&self) -> Result<Vec<PolicyRevision>> {
        self.recent_policy_revisions(i64::MAX).await
    }

    /// The newest `limit` stored revisions without their bytes, newest
    /// first (a page of the console shows some, not every build ever
    /// uploaded).
    pub async fn recent_policy_revisions(&self, limit: i64) -> Result<Vec<PolicyRevision>> {
        const SQL: &str = "SELECT hash, name, version, created_at, key_id \
             FROM nomos_policy_revisions \
             ORDER BY created_at DESC, hash LIMIT $1";
        fn build<R: RowExt>(r: &R) -> Result<PolicyRevision> {
            Ok(PolicyRevision {
                hash: r.text("hash")?,
                name: r.text("name")?,
                version: r.text("version")?,
                created_at: r.time("created_at")?,
                key_id: r.opt_text("key_id")?,
            })
        }
        query(SQL)
            .bind(limit)
            .fetch_all(self)
            .await?
            .iter()
            .map(build)
            .collect()
    }
}

/// A revision with its bytes, from a row of `hash, wasm, name, version,
/// signature, activated_at`.
fn active_policy<R: RowExt>(r: &R) -> Result<ActivePolicy> {
    Ok(ActivePolicy {
        hash: r.text("hash")?,
        wasm: r.bytes("wasm")?,
        name: r.text("name")?,
        version: r.text("version")?,
        activated_at: r.time("activated_at")?,
        signature: r.opt_text("signature")?,
    })
}

/// A revision's hash and signature, from a row of `hash, signature`.
pub(in crate::store) fn policy_head<R: RowExt>(r: &R) -> Result<PolicyHead> {
    Ok(PolicyHead {
        hash: r.text("hash")?,
        signature: r.opt_text("signature")?,
    })
}

/// Activates a saved revision inside `tx` and appends it to the log.
pub(in crate::store) async fn activate_in(
    tx: &mut Tx<'_>,
    hash: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    // The share lock (PostgreSQL) keeps the revision from going away
    // before the commit; SQLite's write lock already does.
    let known = query(format!(
        "SELECT hash FROM nomos_policy_revisions WHERE hash = $1{}",
        tx.backend().lock(" FOR SHARE")
    ))
    .bind(hash)
    .fetch_optional(&mut *tx)
    .await?;
    if known.is_none() {
        return Err(StoreError::UnknownPolicy(hash.to_owned()));
    }
    query(
        "INSERT INTO nomos_policy_active (id, hash, activated_at) VALUES (1, $1, $2) \
         ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash, \
           activated_at = EXCLUDED.activated_at",
    )
    .bind(hash)
    .bind(trunc(now))
    .execute(&mut *tx)
    .await?;
    query("INSERT INTO nomos_policy_activations (hash, activated_at) VALUES ($1, $2)")
        .bind(hash)
        .bind(trunc(now))
        .execute(&mut *tx)
        .await?;
    Ok(())
}
