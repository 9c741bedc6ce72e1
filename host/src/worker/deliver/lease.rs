//! Leases of the deliver step's claims: renewed while their calls run, and
//! confirmed before each call, so that a call begins only on a lease this
//! worker's clock says still runs (see the parent module's doc).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Deliverer;
use crate::store::{Claim, Delivery};

impl Deliverer {
    /// Renews the leases of this worker's calls in flight and of accepted
    /// calls not yet recorded; the deliver step does so every
    /// [`WorkerConfig::renew_interval`](crate::worker::WorkerConfig::renew_interval)
    /// while calls run. A failure is logged: the next tick tries again, and
    /// a lease that lapses meanwhile is only at risk if another worker can
    /// reach the database when this one cannot.
    pub async fn renew_leases(&self) {
        let claims = self.claims_in_flight();
        if claims.is_empty() {
            return;
        }
        let (now, lease) = (self.clock.now(), self.config.lease_duration());
        let renewed = self.store.renew_leases(&claims, now, lease).await;
        if let Ok(held) = &renewed {
            self.extend_leases(held, now + lease);
        }
        match self.renewals.observe(renewed) {
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
            Ok(_) | Err(_) => {}
        }
    }

    /// Records that the leases of `ids` (those of this worker's claims in
    /// flight) last until `until`, as a renewal made them.
    fn extend_leases(&self, ids: &[Uuid], until: DateTime<Utc>) {
        let ids: HashSet<&Uuid> = ids.iter().collect();
        for (claim, known) in self.lock_in_flight().iter_mut() {
            if ids.contains(&claim.id) {
                *known = until.max(*known);
            }
        }
    }

    /// The lease renewals' timer, its first tick a period from now. Not
    /// `interval` and a first `tick().await`: that tick waits for the timer
    /// wheel's next millisecond, up to a millisecond before every pass's
    /// first call.
    pub(super) fn renew_timer(&self) -> tokio::time::Interval {
        let every = self.config.renew_interval();
        let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        renew
    }

    /// The `claims` that still hold their lease, checked before they are
    /// called: a claim whose lease, as last known (claimed or renewed), ends
    /// within a renewal period by this worker's clock is renewed first, in
    /// one statement for all of them, and one that was taken over (or that
    /// cannot be confirmed: the database does not answer) is not held, so
    /// it is not called and the worker holding it now makes the only call.
    /// Claims whose lease is fresh cost no round trip. Asked for a fresh
    /// batch (its claim or the wait for the SOUL may have been slow) and
    /// again at each call, after whatever the call waited for (the batch's
    /// reads, the policy before a retry).
    pub(super) async fn still_held(&self, claims: &[Claim]) -> HashSet<Claim> {
        let margin = chrono::Duration::from_std(self.config.renew_interval())
            .unwrap_or(chrono::Duration::zero());
        let now = self.clock.now();
        let (mut held, stale) = {
            let in_flight = self.lock_in_flight();
            let known = |c: &Claim| in_flight.get(c).copied();
            let held: HashSet<Claim> = (claims.iter())
                .filter(|c| known(c).is_some_and(|until| now + margin < until))
                .copied()
                .collect();
            let stale: Vec<Claim> = (claims.iter())
                .filter(|c| known(c).is_some_and(|until| now + margin >= until))
                .copied()
                .collect();
            (held, stale)
        };
        if stale.is_empty() {
            return held;
        }
        let lease = self.config.lease_duration();
        let renewed = self.store.renew_leases(&stale, now, lease).await;
        if let Ok(renewed) = self.renewals.observe(renewed) {
            self.extend_leases(&renewed, now + lease);
            let renewed: HashSet<Uuid> = renewed.into_iter().collect();
            held.extend(stale.into_iter().filter(|c| renewed.contains(&c.id)));
        }
        held
    }
}

/// A claimed delivery's claim and the end of its lease as claimed (a claim
/// without a recorded end is taken as ended: it is confirmed before any
/// call).
pub(super) fn claimed_lease(delivery: &Delivery) -> Option<(Claim, DateTime<Utc>)> {
    let until = delivery
        .lease_expires_at
        .unwrap_or(DateTime::<Utc>::MIN_UTC);
    Some((delivery.claim()?, until))
}
