//! The worker and its delivery promises: in-process against both stores,
//! the seeded fault-injection simulation, and fault tests with real
//! `nomos-continue serve` processes on PostgreSQL.

#[path = "simulation.rs"]
mod simulation;
#[path = "worker.rs"]
mod worker;
#[path = "worker_faults.rs"]
mod worker_faults;
