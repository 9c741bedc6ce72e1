//! The faults the driver injects into the engine's world: a worker killed
//! or stalled past its lease, the runtime down for minutes, and a store
//! that refuses every write for a stretch of simulated time.

use chrono::Duration;
use nomos_continue::clock::Clock;
use nomos_continue::store::testing::refuse_writes;
use nomos_continue::store::Claim;
use rand::seq::SliceRandom;
use rand::Rng;

use super::{lock, worker_index, Sim, RENEW_STEP};

impl Sim {
    /// A worker killed mid-pass: its calls in flight never return (the
    /// runtime may or may not have acted on them), it renews nothing more,
    /// and a new incarnation (a new worker id) takes its place.
    pub(super) async fn kill(&mut self) {
        if self.workers.is_empty() {
            return;
        }
        let i = self.rng.gen_range(0..self.workers.len());
        self.record(format_args!("kill worker {i}"));
        let dead = self.workers.swap_remove(i);
        self.runtime.kill(worker_index(&dead.worker));
        // Read with no await after the kill: later claims never get an answer.
        let held = dead.worker.claims_in_flight();
        self.mark_unknown(held).await;
        self.faults += 1;
        self.spawn_worker();
    }

    /// A worker that stalls past its lease: time moves on without its
    /// renewals, so its claims may be taken over while its calls still run.
    pub(super) async fn stall(&mut self) {
        let Some(stalled) = self.workers.choose(&mut self.rng).map(|w| w.worker.clone()) else {
            return;
        };
        let index = worker_index(&stalled);
        self.record(format_args!("stall worker {index}"));
        self.faults += 1;
        // Seven seconds pass in renewal-sized steps; every other worker
        // renews after each step, as its ticks would. The stalled worker's
        // claims held at any point of the stall (read right after each
        // step, with no await in between) may lapse: their outcome becomes
        // unknown.
        let mut held = Vec::new();
        let mut left = Duration::seconds(7);
        while left > Duration::zero() {
            let step = left.min(RENEW_STEP);
            self.clock.advance(step);
            left -= step;
            held.extend(stalled.claims_in_flight());
            self.while_refusing().await;
            for incarnation in &self.workers {
                if worker_index(&incarnation.worker) != index {
                    incarnation.worker.renew_leases().await;
                }
            }
        }
        held.extend(stalled.claims_in_flight());
        self.mark_unknown(held).await;
    }

    /// Records the keys of these claims: their calls' outcome becomes
    /// unknown to the engine.
    pub(super) async fn mark_unknown(&mut self, claims: Vec<Claim>) {
        for claim in claims {
            if let Ok(Some(d)) = self.store.delivery(claim.id).await {
                self.unknown.insert(d.idempotency_key);
            }
        }
    }

    /// The runtime goes down for one to five minutes of simulated time.
    pub(super) fn outage(&mut self) {
        let minutes = self.rng.gen_range(1..=5);
        self.record(format_args!("outage {minutes} min"));
        lock(&self.runtime.weather).down_until =
            Some(self.clock.now() + Duration::minutes(minutes));
        self.faults += 1;
    }

    /// The store refuses every write (SQLSTATE 53100, a full disk) for five
    /// seconds to two minutes of simulated time; `while_refusing` ends it.
    pub(super) async fn refuse(&mut self) {
        let seconds = self.rng.gen_range(5..=120);
        self.record(format_args!("refuse writes {seconds} s"));
        if self.refusing_until.is_some() {
            return;
        }
        let now = self.clock.now();
        if let Err(e) = refuse_writes(&self.store, true, now).await {
            self.broken
                .push(format!("could not make the store refuse: {e}"));
            return;
        }
        self.refusing_until = Some(now + Duration::seconds(seconds));
        self.faults += 1;
        self.while_refusing().await;
    }

    /// Called as simulated time passes: while writes are refused, the
    /// claims in flight cannot be renewed and may lapse, so their outcome
    /// becomes unknown (as in a stall); once the stretch is over, the store
    /// takes writes again.
    pub(super) async fn while_refusing(&mut self) {
        let Some(until) = self.refusing_until else {
            return;
        };
        let held: Vec<Claim> = (self.workers.iter())
            .flat_map(|w| w.worker.claims_in_flight())
            .collect();
        self.mark_unknown(held).await;
        if self.clock.now() >= until {
            self.end_refusal().await;
        }
    }

    /// The store takes writes again.
    pub(super) async fn end_refusal(&mut self) {
        if self.refusing_until.take().is_none() {
            return;
        }
        if let Err(e) = refuse_writes(&self.store, false, self.clock.now()).await {
            self.broken
                .push(format!("could not make the store take writes again: {e}"));
        }
    }
}
