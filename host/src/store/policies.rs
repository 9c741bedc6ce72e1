//! Continuation policy revisions and the active one.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::Row;

use super::decode::RowExt;
use super::types::{ActivePolicy, PolicyRevision};
use super::{micros, trunc, Db, Result, Store, StoreError, SQLITE_BEGIN};

/// The SHA-256 of a policy component as lowercase hex: its revision id.
pub fn policy_hash(wasm: &[u8]) -> String {
    hex::encode(Sha256::digest(wasm))
}

impl Store {
    /// Stores a policy revision (validated by the caller beforehand).
    ///
    /// `hash` must be [`policy_hash`] of `wasm`, else
    /// [`StoreError::InvalidValue`]: a revision id that lies about its bytes
    /// would make recorded decisions unverifiable. Saving the same bytes
    /// again is a no-op; returns whether a new row was written. Saving does
    /// not activate: see [`Store::activate_policy`].
    pub async fn save_policy_revision(
        &self,
        hash: &str,
        wasm: &[u8],
        name: &str,
        version: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let actual = policy_hash(wasm);
        if hash != actual {
            return Err(StoreError::InvalidValue {
                field: "hash",
                reason: format!("is not the SHA-256 of the wasm ({actual})"),
            });
        }
        let now = trunc(now);
        let n = match &self.db {
            Db::Pg(pool) => sqlx::query(
                "INSERT INTO nomos_policy_revisions (hash, wasm, name, version, created_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (hash) DO NOTHING",
            )
            .bind(hash)
            .bind(wasm)
            .bind(name)
            .bind(version)
            .bind(now)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Lite(pool) => sqlx::query(
                "INSERT INTO nomos_policy_revisions (hash, wasm, name, version, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (hash) DO NOTHING",
            )
            .bind(hash)
            .bind(wasm)
            .bind(name)
            .bind(version)
            .bind(micros(now))
            .execute(pool)
            .await?
            .rows_affected(),
        };
        Ok(n == 1)
    }

    /// Makes a saved revision the active one for every replica (they poll
    /// [`Store::active_policy`] and converge). [`StoreError::UnknownPolicy`]
    /// if it was never saved; one transaction, so the active row always
    /// names a stored revision.
    pub async fn activate_policy(&self, hash: &str, now: DateTime<Utc>) -> Result<()> {
        let now = trunc(now);
        match &self.db {
            Db::Pg(pool) => {
                let mut tx = pool.begin().await?;
                let known: Option<String> = sqlx::query_scalar(
                    "SELECT hash FROM nomos_policy_revisions WHERE hash = $1 FOR SHARE",
                )
                .bind(hash)
                .fetch_optional(&mut *tx)
                .await?;
                if known.is_none() {
                    return Err(StoreError::UnknownPolicy(hash.to_owned()));
                }
                sqlx::query(
                    "INSERT INTO nomos_policy_active (id, hash, activated_at) VALUES (1, $1, $2) \
                     ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash, \
                       activated_at = EXCLUDED.activated_at",
                )
                .bind(hash)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
            }
            Db::Lite(pool) => {
                let mut tx = pool.begin_with(SQLITE_BEGIN).await?;
                let known: Option<String> =
                    sqlx::query_scalar("SELECT hash FROM nomos_policy_revisions WHERE hash = ?1")
                        .bind(hash)
                        .fetch_optional(&mut *tx)
                        .await?;
                if known.is_none() {
                    return Err(StoreError::UnknownPolicy(hash.to_owned()));
                }
                sqlx::query(
                    "INSERT INTO nomos_policy_active (id, hash, activated_at) VALUES (1, ?1, ?2) \
                     ON CONFLICT (id) DO UPDATE SET hash = excluded.hash, \
                       activated_at = excluded.activated_at",
                )
                .bind(hash)
                .bind(micros(now))
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
            }
        }
        Ok(())
    }

    /// The active revision with its bytes; `None` until one is activated (the
    /// host then runs its built-in policy).
    pub async fn active_policy(&self) -> Result<Option<ActivePolicy>> {
        const SQL: &str = "SELECT r.hash, r.wasm, r.name, r.version, a.activated_at \
             FROM nomos_policy_active a JOIN nomos_policy_revisions r ON r.hash = a.hash \
             WHERE a.id = 1";
        fn build<R: RowExt + Row>(r: &R, wasm: Vec<u8>) -> Result<ActivePolicy> {
            Ok(ActivePolicy {
                hash: r.text("hash")?,
                wasm,
                name: r.text("name")?,
                version: r.text("version")?,
                activated_at: r.time("activated_at")?,
            })
        }
        match &self.db {
            Db::Pg(pool) => match sqlx::query(SQL).fetch_optional(pool).await? {
                None => Ok(None),
                Some(r) => {
                    let wasm: Vec<u8> = r.try_get("wasm")?;
                    build(&r, wasm).map(Some)
                }
            },
            Db::Lite(pool) => match sqlx::query(SQL).fetch_optional(pool).await? {
                None => Ok(None),
                Some(r) => {
                    let wasm: Vec<u8> = r.try_get("wasm")?;
                    build(&r, wasm).map(Some)
                }
            },
        }
    }

    /// Every stored revision without its bytes, newest first (for the API
    /// and `policy` CLI).
    pub async fn policy_revisions(&self) -> Result<Vec<PolicyRevision>> {
        const SQL: &str = "SELECT hash, name, version, created_at FROM nomos_policy_revisions \
             ORDER BY created_at DESC, hash";
        fn build<R: RowExt>(r: &R) -> Result<PolicyRevision> {
            Ok(PolicyRevision {
                hash: r.text("hash")?,
                name: r.text("name")?,
                version: r.text("version")?,
                created_at: r.time("created_at")?,
            })
        }
        match &self.db {
            Db::Pg(pool) => sqlx::query(SQL)
                .fetch_all(pool)
                .await?
                .iter()
                .map(build)
                .collect(),
            Db::Lite(pool) => sqlx::query(SQL)
                .fetch_all(pool)
                .await?
                .iter()
                .map(build)
                .collect(),
        }
    }
}
