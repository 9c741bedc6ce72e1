//! `nomos-continue`: parses the command line and hands over to the library.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use nomos_continue::commands::{self, serve::ServeConfig};

/// Auto-continuation for agent runtimes: re-invokes the agent when its
/// asynchronous executions finish, while the operator's approval is open.
#[derive(Parser)]
#[command(name = "nomos-continue", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Args)]
struct DbArgs {
    /// postgres://… or sqlite:FILE; the default is an SQLite file here.
    #[arg(long, env = "DATABASE_URL", default_value = commands::serve::DEFAULT_DATABASE_URL)]
    database_url: String,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The API's address; loopback by default.
    #[arg(long, env = "NOMOS_CONTINUE_LISTEN", default_value = commands::serve::DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Bearer token the API requires (every route but /healthz).
    #[arg(long, env = "NOMOS_CONTINUE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// POST continuations and notices to this runtime webhook.
    #[arg(
        long,
        env = "NOMOS_CONTINUE_AGENT_WEBHOOK",
        conflicts_with = "agent_openai"
    )]
    agent_webhook: Option<String>,
    /// Built-in chatWith: call this OpenAI-compatible chat endpoint with the
    /// session's stored history (record turns with POST /v1/sessions/{id}/turns).
    #[arg(long, env = "NOMOS_CONTINUE_AGENT_OPENAI")]
    agent_openai: Option<String>,
    /// The model chatWith asks for.
    #[arg(long, env = "NOMOS_CONTINUE_OPENAI_MODEL", default_value = commands::serve::DEFAULT_OPENAI_MODEL)]
    openai_model: String,
    /// API key sent to the chatWith endpoint as a bearer token.
    #[arg(long, env = "NOMOS_CONTINUE_OPENAI_KEY", hide_env_values = true)]
    openai_key: Option<String>,
    /// Bearer token sent to the webhook.
    #[arg(long, env = "NOMOS_CONTINUE_AGENT_TOKEN", hide_env_values = true)]
    agent_token: Option<String>,
    /// A policy component to run instead of the built-in one; the file is
    /// watched and a valid new version is swapped in without a restart.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY")]
    policy: Option<PathBuf>,
    /// This process's worker id (unique per replica); generated if unset.
    #[arg(long, env = "NOMOS_CONTINUE_WORKER_ID")]
    worker_id: Option<String>,
    /// Fallback poll interval in milliseconds (wake-ups make it rarely matter).
    #[arg(long, env = "NOMOS_CONTINUE_POLL_MS", default_value_t = 2000)]
    poll_ms: u64,
    /// Delivery lease in seconds, renewed every third of it while a call
    /// runs: how long a dead replica's claims wait for another replica.
    #[arg(long, env = "NOMOS_CONTINUE_LEASE_SECS", default_value_t = 6)]
    lease_secs: u64,
    /// How long a delivery is retried after its first failed call before it
    /// ends as failed (with a notice), in seconds.
    #[arg(long, env = "NOMOS_CONTINUE_RETRY_BUDGET_SECS", default_value_t = 900)]
    retry_budget_secs: u64,
    /// Policy file and database revision check interval in milliseconds.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_POLL_MS", default_value_t = 2000)]
    policy_poll_ms: u64,
    /// Do not LISTEN for PostgreSQL wake-ups: the worker finds work by its
    /// poll alone (for deployments whose pooler drops LISTEN, and to test
    /// that correctness never depends on a wake-up).
    #[arg(long, env = "NOMOS_CONTINUE_NO_WAKE_LISTENER")]
    no_wake_listener: bool,
    /// CPU time one policy call (or batch) may use, in milliseconds.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_DEADLINE_MS", default_value_t = 50)]
    policy_deadline_ms: u64,
    /// Linear memory one policy instance may grow to, in MiB.
    #[arg(long, env = "NOMOS_CONTINUE_POLICY_MEMORY_MIB", default_value_t = 64)]
    policy_memory_mib: usize,
    /// The host's cap on continuations per assent window, whatever the
    /// policy answers (the default policy stops at 20 on its own).
    #[arg(long, env = "NOMOS_CONTINUE_HARD_CAP", default_value_t = 50)]
    hard_cap: i32,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the worker, the rescuer, the policy watchers and the HTTP API.
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
    },
    /// Run golden cases (the tests/golden layout) against a policy.
    Test {
        /// The policy component (.wasm).
        wasm: PathBuf,
        /// The golden directory.
        #[arg(default_value = "tests/golden")]
        golden_dir: PathBuf,
    },
    /// Decide one execution: decision input JSON on stdin, decision JSON out.
    Decide {
        /// The policy component (.wasm).
        wasm: PathBuf,
    },
    /// Extract execution ids from a tool result on stdin; JSON array out.
    Extract {
        /// The policy component (.wasm).
        wasm: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("NOMOS_CONTINUE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match cli.command {
        Cmd::Serve(args) => commands::serve::run(serve_config(*args)).map(|()| ExitCode::SUCCESS),
        Cmd::Demo => nomos_continue::demo::run().map(|_| ExitCode::SUCCESS),
        Cmd::Migrate(db) => commands::migrate::run(&db.database_url).map(|()| ExitCode::SUCCESS),
        Cmd::Status { db, session } => {
            commands::status::run(&db.database_url, session.as_deref()).map(|()| ExitCode::SUCCESS)
        }
        Cmd::Retry { db, delivery } => commands::retry::run(&db.database_url, &delivery),
        Cmd::Policy(PolicyCmd::Check { wasm }) => commands::policy::check(&wasm),
        Cmd::Policy(PolicyCmd::Test { wasm, golden_dir }) => {
            commands::policy::test(&wasm, &golden_dir)
        }
        Cmd::Policy(PolicyCmd::Decide { wasm }) => commands::policy::decide(&wasm),
        Cmd::Policy(PolicyCmd::Extract { wasm }) => commands::policy::extract(&wasm),
    };
    commands::exit_code(result)
}

fn serve_config(args: ServeArgs) -> ServeConfig {
    let mut config = ServeConfig {
        database_url: args.db.database_url,
        listen: args.listen,
        token: args.token,
        agent_webhook: args.agent_webhook,
        agent_token: args.agent_token,
        agent_openai: args.agent_openai,
        openai_model: args.openai_model,
        openai_key: args.openai_key,
        policy: args.policy,
        policy_poll: Duration::from_millis(args.policy_poll_ms),
        wake_listener: !args.no_wake_listener,
        ..ServeConfig::default()
    };
    if let Some(id) = args.worker_id {
        config.worker.worker_id = id;
    }
    config.worker.poll_interval = Duration::from_millis(args.poll_ms);
    config.worker.lease = Duration::from_secs(args.lease_secs.max(1));
    config.worker.retry_budget = Duration::from_secs(args.retry_budget_secs);
    config.worker.hard_cap = args.hard_cap;
    config.limits.deadline = Duration::from_millis(args.policy_deadline_ms.max(1));
    config.limits.max_memory_bytes = args.policy_memory_mib.max(1) << 20;
    config
}
