//! Keeping the leases of a deliver step's claims: renewed while their calls
//! run, and checked again just before a call when they may have lapsed.

use std::collections::HashSet;

use uuid::Uuid;

use super::Deliverer;
use crate::store::{Claim, Delivery};

impl Deliverer {
    /// Renews the leases of this worker's calls in flight and of accepted
    /// calls not yet recorded; the deliver step does so every
    /// [`WorkerConfig::renew_interval`](super::WorkerConfig::renew_interval)
    /// while calls run. A failure is logged: the next tick tries again, and
    /// a lease that lapses meanwhile is only at risk if another worker can
    /// reach the database when this one cannot.
    pub async fn renew_leases(&self) {
        let claims = self.claims_in_flight();
        if claims.is_empty() {
            return;
        }
        let lease = self.config.lease_duration();
        match self
            .store
            .renew_leases(&claims, self.clock.now(), lease)
            .await
        {
            Ok(held) if held.len() < claims.len() => {
                // A claim recorded while the renewal ran is no longer
                // pending, so not renewed, and no longer ours in flight:
                // only the rest were taken over.
                let still_ours: HashSet<Claim> = self.claims_in_flight().into_iter().collect();
                let held: HashSet<Uuid> = held.into_iter().collect();
                let lost = claims
                    .iter()
                    .filter(|c| !held.contains(&c.id) && still_ours.contains(c))
                    .count();
                if lost > 0 {
                    tracing::warn!(lost, "leases taken over while their calls ran");
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("lease renewal failed: {e}"),
        }
    }

    /// The claims of a fresh batch that still hold their lease, checked just
    /// before their calls when the lease may have lapsed since it was taken
    /// (the claim's round trip, or the wait for the SOUL, took longer than
    /// a renewal period): those leases are renewed, in one statement for the
    /// batch, and a claim another worker has taken over in the meantime is
    /// not called, so that worker's call is the only one. A batch whose
    /// lease is fresh costs no round trip.
    pub(super) async fn still_held(&self, batch: &[Delivery]) -> HashSet<Claim> {
        let margin = chrono::Duration::from_std(self.config.renew_interval())
            .unwrap_or(chrono::Duration::zero());
        let now = self.clock.now();
        let (fresh, stale): (Vec<&Delivery>, Vec<&Delivery>) = batch
            .iter()
            .partition(|d| d.lease_expires_at.is_some_and(|until| now + margin < until));
        let mut held: HashSet<Claim> = fresh.iter().filter_map(|d| d.claim()).collect();
        let stale: Vec<Claim> = stale
            .iter()
            .filter(|d| d.lease_expires_at.is_some())
            .filter_map(|d| d.claim())
            .collect();
        if stale.is_empty() {
            return held;
        }
        let lease = self.config.lease_duration();
        match self.store.renew_leases(&stale, now, lease).await {
            Ok(renewed) => {
                let renewed: HashSet<Uuid> = renewed.into_iter().collect();
                held.extend(stale.into_iter().filter(|c| renewed.contains(&c.id)));
            }
            Err(e) => {
                tracing::warn!(
                    claims = stale.len(),
                    "could not confirm stale claims, not calling: {e}"
                );
            }
        }
        held
    }
}
