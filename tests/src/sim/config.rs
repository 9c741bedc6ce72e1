//! What a simulation is asked to do ([`SimConfig`]) and what it found
//! ([`SimReport`]).

use sha2::{Digest, Sha256};

/// One simulation's size.
#[derive(Debug, Clone, Copy)]
pub struct SimConfig {
    pub seed: u64,
    /// Random steps before the drain.
    pub steps: usize,
    /// Worker incarnations alive at once.
    pub workers: usize,
    pub sessions: usize,
    /// The agent's endpoint answers 500 to everything, the drain included:
    /// every continuation fails, and so does every notice's agent copy.
    pub agent_down_for_good: bool,
    /// The operator's channel answers 500 to everything too.
    pub operator_down_for_good: bool,
    /// The store refuses every write for stretches of simulated time, as a
    /// full disk makes it (PostgreSQL only, see `refuse`).
    pub refusing_store: bool,
    /// The store fails over now and then to a standby that lacks its last
    /// commits (`failover`): the standby is brought up to date only right
    /// before each agent call, as the standby fence guarantees.
    pub losing_store: bool,
    /// With `losing_store`: the standby is brought up to date at the
    /// driver's long waits instead of before each call, as if the worker
    /// had no standby fence; the check must then find executions sent under
    /// two keys (what the fence is for).
    pub unfenced_standby: bool,
    /// Print each failed pass (with the seed and the store) as it happens,
    /// not only when `SIM_LOG` is set.
    pub print_errors: bool,
}

impl SimConfig {
    /// A size that runs in a couple of seconds.
    pub fn small(seed: u64) -> Self {
        Self {
            seed,
            steps: 300,
            workers: 3,
            sessions: 6,
            agent_down_for_good: false,
            operator_down_for_good: false,
            refusing_store: false,
            losing_store: false,
            unfenced_standby: false,
            print_errors: false,
        }
    }

    /// [`Self::small`] with the agent's endpoint down for good.
    pub fn agent_down(seed: u64) -> Self {
        Self {
            agent_down_for_good: true,
            ..Self::small(seed)
        }
    }

    /// [`Self::small`] with a store that refuses writes now and then.
    pub fn refusing(seed: u64) -> Self {
        Self {
            refusing_store: true,
            ..Self::small(seed)
        }
    }

    /// [`Self::small`] with a store that fails over now and then, losing
    /// its last commits.
    pub fn losing(seed: u64) -> Self {
        Self {
            losing_store: true,
            ..Self::small(seed)
        }
    }

    /// The seed of the ids the driver makes up (sessions, executions,
    /// tasks). It mixes in the modes, so that runs of one seed in other
    /// modes on one store (as the tests do) do not share ids, while a run
    /// repeated in the same mode makes up the same ones.
    pub(super) fn id_seed(&self) -> u64 {
        let mut hash = Sha256::new();
        hash.update(self.seed.to_le_bytes());
        hash.update([
            u8::from(self.agent_down_for_good),
            u8::from(self.operator_down_for_good),
            u8::from(self.refusing_store),
            u8::from(self.losing_store),
            u8::from(self.unfenced_standby),
        ]);
        let bytes: [u8; 8] = hash.finalize()[..8].try_into().unwrap_or_default();
        u64::from_le_bytes(bytes)
    }
}

/// What a simulation did and found.
#[derive(Debug, Default, Clone)]
pub struct SimReport {
    pub seed: u64,
    /// Driver steps taken (each one operation on the engine or the world).
    pub operations: usize,
    /// Faults injected: failed or held agent calls, outages, kills, stalls,
    /// late regressions, reports before their link, big results, stretches
    /// of refused writes.
    pub faults: usize,
    /// Of those, the ones the driver chose (all but the agent's and the
    /// operator channel's answers): the same for the same seed and mode.
    pub driver_faults: usize,
    /// SHA-256 of the driver's event log: every step with what it chose
    /// (session, execution and its script, worker, time moved, fault). The
    /// same for the same seed and mode; see `record` for what it leaves out.
    pub digest: String,
    /// Agent calls made.
    pub calls: usize,
    /// Executions settled continued / dropped / failed at the end.
    pub continued: usize,
    pub dropped: usize,
    pub failed: usize,
    /// Worker and notifier passes that returned an error the simulation did
    /// not inject (a fault of the engine or the store), deadlocks included.
    pub pass_errors: usize,
    /// Deadlocks PostgreSQL detected during the run: the passes that failed
    /// with `deadlock detected`, or the database's own count
    /// (`pg_stat_database`) if higher, which also has the statements the
    /// engine retries without failing a pass.
    pub deadlocks: usize,
    /// Passes that failed on an injected refusal (`refusing_store`).
    pub refused: usize,
    /// Failovers that lost commits (`losing_store`), and the keys whose
    /// accepted call's record they lost (sent again under the same key).
    pub failovers: usize,
    pub lost_records: usize,
    /// Notices whose copy reached the operator's channel, and notices that
    /// reached no one (counted as undelivered).
    pub told_operator: usize,
    pub reached_no_one: usize,
    /// Broken promises, each naming the promise; empty is a pass.
    pub violations: Vec<String>,
}
