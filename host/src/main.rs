//! `nomos-continue`: parses the command line and hands over to the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use nomos_continue::commands::{
    self, replay::ReplayArgs, serve::ServeArgs, DbArgs, LogFormat, PolicyLimitArgs,
};

/// Auto-continuation for agent runtimes: re-invokes the agent when its
/// asynchronous executions finish, while the operator's approval is open.
#[derive(Parser)]
#[command(name = "nomos-continue", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
    /// How log lines are written on stderr: `text`, or `json` (one object
    /// a line, with the trace and span ids). The level is set by
    /// NOMOS_CONTINUE_LOG or RUST_LOG (`info` for serve, `warn` otherwise).
    #[arg(
        long,
        global = true,
        env = "NOMOS_CONTINUE_LOG_FORMAT",
        default_value = "text",
        help_heading = "Logs and telemetry"
    )]
    log_format: LogFormat,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the worker, the rescuer, the decision log's retention, the policy
    /// watchers and the HTTP API.
    // Boxed: the flags make this variant far larger than the others.
    Serve(Box<ServeArgs>),
    /// Replay the seed's scenario end to end on a throwaway SQLite file:
    /// approve once, then watch the agent recover from a failure and finish
    /// with no operator message.
    Demo,
    /// Apply the database migrations and exit.
    Migrate(DbArgs),
    /// Print a summary: one session's window, links and ledger, or the
    /// whole deployment's counts.
    Status {
        #[command(flatten)]
        db: DbArgs,
        /// A session id.
        session: Option<String>,
    },
    /// Send a delivery that ended failed (or a continuation dropped when its
    /// window closed) again, with the same idempotency key.
    Retry {
        #[command(flatten)]
        db: DbArgs,
        /// The delivery's id (from `status SESSION` or the notice).
        delivery: String,
    },
    /// Print the HTTP API's OpenAPI document (what `GET /openapi.json`
    /// serves; `docs/openapi.json` is this output).
    Openapi,
    /// Work with continuation policies (WebAssembly components).
    #[command(subcommand)]
    Policy(PolicyCmd),
}

#[derive(Subcommand)]
enum PolicyCmd {
    /// Validate a policy: compile, type-check against the contract, run the
    /// probes under production limits. Exits non-zero with the reasons.
    Check {
        /// The policy component (.wasm).
        wasm: PathBuf,
        #[command(flatten)]
        limits: PolicyLimitArgs,
    },
    /// Run golden cases (the tests/golden layout) against a policy.
    Test {
        /// The policy component (.wasm).
        wasm: PathBuf,
        /// The golden directory.
        #[arg(default_value = "tests/golden")]
        golden_dir: PathBuf,
        /// Judge `describe` by its contract alone: the policy names itself
        /// (a policy in another language that keeps every other answer).
        #[arg(long)]
        own_describe: bool,
        #[command(flatten)]
        limits: PolicyLimitArgs,
    },
    /// Decide one execution: decision input JSON on stdin, decision JSON out.
    Decide {
        /// The policy component (.wasm).
        wasm: PathBuf,
        #[command(flatten)]
        limits: PolicyLimitArgs,
    },
    /// Extract the links (execution ids, protocol tasks) a tool result on
    /// stdin names; JSON array out, as `extract-links` prints it.
    Extract {
        /// The policy component (.wasm).
        wasm: PathBuf,
        #[command(flatten)]
        limits: PolicyLimitArgs,
    },
    /// Decide the recorded decisions again with a candidate policy and
    /// print each one that changes; exits 1 if any did.
    Replay {
        /// The candidate component (.wasm).
        candidate: PathBuf,
        /// Only decisions taken this recently (e.g. 90m, 24h, 7d).
        #[arg(long, value_parser = humantime::parse_duration)]
        since: Option<std::time::Duration>,
        /// Only this session's decisions.
        #[arg(long)]
        session: Option<String>,
        /// Exit 0 even when decisions changed.
        #[arg(long)]
        allow_changes: bool,
        /// Decisions of each recorded revision re-run first to check that
        /// it reproduces its own answers.
        #[arg(long, default_value_t = 100)]
        sample: usize,
        #[command(flatten)]
        limits: PolicyLimitArgs,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Write a recorded decision as a golden case (`.in` and `.out`).
    Capture {
        /// The decision's id (from `policy replay`).
        decision: i64,
        /// The golden folder to write into.
        #[arg(long, default_value = "tests/golden/decide")]
        to: PathBuf,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Write a new Ed25519 key pair for signing policies: PREFIX.key
    /// (private, mode 0600) and PREFIX.pub (for serve --policy-verify-key).
    Keygen {
        /// Path prefix of the two key files.
        prefix: PathBuf,
    },
    /// Sign a policy component: writes POLICY.wasm.sig.
    Sign {
        /// The private key file (PREFIX.key).
        #[arg(long)]
        key: PathBuf,
        /// The policy component (.wasm).
        wasm: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = match cli.command {
        Cmd::Serve(_) => "info",
        _ => "warn",
    };
    commands::init_logs(cli.log_format, level);
    let result = match cli.command {
        Cmd::Serve(args) => commands::serve::run(*args).map(|()| ExitCode::SUCCESS),
        Cmd::Demo => nomos_continue::commands::demo::run().map(|_| ExitCode::SUCCESS),
        Cmd::Migrate(db) => commands::migrate::run(&db.urls()).map(|()| ExitCode::SUCCESS),
        Cmd::Status { db, session } => {
            commands::status::run(&db.urls(), session.as_deref()).map(|()| ExitCode::SUCCESS)
        }
        Cmd::Retry { db, delivery } => commands::retry::run(&db.urls(), &delivery),
        Cmd::Openapi => commands::openapi::run(),
        Cmd::Policy(PolicyCmd::Check { wasm, limits }) => commands::policy::check(&wasm, &limits),
        Cmd::Policy(PolicyCmd::Test {
            wasm,
            golden_dir,
            own_describe,
            limits,
        }) => commands::policy::test(&wasm, &golden_dir, own_describe, &limits),
        Cmd::Policy(PolicyCmd::Decide { wasm, limits }) => commands::policy::decide(&wasm, &limits),
        Cmd::Policy(PolicyCmd::Extract { wasm, limits }) => {
            commands::policy::extract(&wasm, &limits)
        }
        Cmd::Policy(PolicyCmd::Replay {
            candidate,
            since,
            session,
            allow_changes,
            sample,
            db,
            limits,
        }) => commands::replay::replay(&ReplayArgs {
            candidate,
            since,
            session,
            database_url: db.database_url,
            allow_changes,
            sample,
            limits: limits.limits(),
        }),
        Cmd::Policy(PolicyCmd::Capture { decision, to, db }) => {
            commands::replay::capture(&db.urls(), decision, &to)
        }
        Cmd::Policy(PolicyCmd::Keygen { prefix }) => commands::signing::keygen(&prefix),
        Cmd::Policy(PolicyCmd::Sign { key, wasm }) => commands::signing::sign(&key, &wasm),
    };
    commands::exit_code(result)
}
