//! The subcommands of the `nomos-continue` binary, one module each; `main`
//! only parses arguments and calls these.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use crate::policy::Limits;
pub use crate::telemetry::{init_logs, LogFormat};

pub mod demo;
pub mod duration;
pub mod migrate;
pub mod openapi;
pub mod policy;
pub mod replay;
pub mod retry;
pub mod serve;
pub mod signing;
pub mod status;

/// The database flag every subcommand that opens the store takes.
#[derive(Args)]
pub struct DbArgs {
    /// postgres://… or sqlite:FILE; the default is an SQLite file here.
    /// A primary and its standbys: repeat it, or name the hosts in one URL
    /// as libpq does (postgresql://user@h1:5432,h2:5432/db); the writable
    /// one is used, and found again after a failover.
    // The value is never shown in the help: a URL carries its password.
    #[arg(
        long,
        env = "DATABASE_URL",
        hide_env_values = true,
        default_value = crate::server::DEFAULT_DATABASE_URL
    )]
    pub database_url: Vec<String>,
}

impl DbArgs {
    /// The URLs given, as `Store::connect_any` takes them.
    pub fn urls(&self) -> Vec<&str> {
        self.database_url.iter().map(String::as_str).collect()
    }
}

/// Exit status for bad input, as the guest's own command line uses.
pub const EXIT_BAD_INPUT: u8 = 2;

/// Maps a command's result to the process status, printing the error chain
/// on one line.
pub fn exit_code(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// The sandbox a policy runs in: its limits and its compile cache. `serve`
/// and every `policy` command take the same flags, so an author checks a
/// policy under exactly the limits production will give it, a limit a
/// policy hits is named by the flag that raises it, and `policy check` can
/// compile a revision into the cache `serve` then loads it from.
#[derive(Args, Clone, Debug)]
pub struct PolicyLimitArgs {
    /// CPU time one policy call (or batch) may use (`50ms`).
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_DEADLINE", default_value = "50ms",
          value_parser = duration::parse)]
    pub policy_deadline: Duration,
    /// Deprecated: `--policy-deadline` in milliseconds.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_POLICY_DEADLINE_MS",
        hide = true,
        conflicts_with = "policy_deadline"
    )]
    pub policy_deadline_ms: Option<u64>,
    /// Linear memory one policy instance may grow to, in MiB.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_MEMORY_MIB",
          default_value_t = Limits::DEFAULT.max_memory_bytes >> 20)]
    pub policy_memory_mib: usize,
    /// Core module instances one policy sandbox may hold.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_CORE_INSTANCES",
          default_value_t = Limits::DEFAULT.core_instances_per_sandbox)]
    pub policy_core_instances: u32,
    /// Linear memories one policy sandbox may hold.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_MEMORIES",
          default_value_t = Limits::DEFAULT.memories_per_sandbox)]
    pub policy_memories: u32,
    /// Tables one policy sandbox may hold.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_TABLES",
          default_value_t = Limits::DEFAULT.tables_per_sandbox)]
    pub policy_tables: u32,
    /// Elements one table of a policy may hold.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_TABLE_ELEMENTS",
          default_value_t = Limits::DEFAULT.max_table_elements)]
    pub policy_table_elements: usize,
    /// Keep compiled policies in this directory, so a revision compiled
    /// once (by `policy check`, another replica, an earlier run) loads
    /// instead of compiling again. The host runs the machine code it finds
    /// there: protect it as you protect the binary.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_COMPILE_CACHE")]
    pub policy_compile_cache: Option<PathBuf>,
}

impl PolicyLimitArgs {
    /// The default limits with these flags applied.
    pub fn limits(&self) -> Limits {
        let mut limits = Limits::DEFAULT;
        self.apply(&mut limits);
        limits
    }

    /// Overrides the sandbox fields of `limits` with these flags.
    pub fn apply(&self, limits: &mut Limits) {
        let deadline = duration::legacy(
            self.policy_deadline_ms,
            duration::Unit::Millis,
            ("--policy-deadline-ms", "--policy-deadline"),
            self.policy_deadline,
        );
        limits.deadline = deadline.max(Duration::from_millis(1));
        limits.max_memory_bytes = self.policy_memory_mib.max(1) << 20;
        limits.core_instances_per_sandbox = self.policy_core_instances;
        limits.memories_per_sandbox = self.policy_memories;
        limits.tables_per_sandbox = self.policy_tables;
        limits.max_table_elements = self.policy_table_elements;
        limits.compile_cache.clone_from(&self.policy_compile_cache);
    }
}
