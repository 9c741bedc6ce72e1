//! The worker and its delivery promises: in-process against both stores,
//! the seeded fault-injection simulation, and fault tests with real
//! `nomos-continue serve` processes on PostgreSQL.

mod simulation;
mod stuck;
mod worker;
mod worker_faults;
