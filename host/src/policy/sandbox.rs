//! The sandbox a policy runs in: one [`Engine`] with the pooling allocator
//! and epoch interruption, a WASI context that grants nothing, and a fresh
//! [`Store`] per evaluation so no state survives from one batch to the next.

use derive_setters::Setters;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{
    Cache, CacheConfig, Config, Enabled, Engine, InstanceAllocationStrategy,
    PoolingAllocationConfig, ResourceLimiter, Store, UpdateDeadline,
};
use wasmtime_wasi::{
    Deterministic, HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView,
};

use super::guest_output::GuestOutput;
use super::PolicyError;

/// Bytes of each pooled memory and table kept resident between sandboxes.
const KEEP_RESIDENT_BYTES: usize = 1 << 20;

/// How long one epoch tick lasts; deadlines are counted in ticks.
const EPOCH_TICK: Duration = Duration::from_millis(1);

/// The production limits every policy call runs under.
#[derive(Debug, Clone, Setters)]
#[setters(prefix = "with_")]
#[non_exhaustive]
pub struct Limits {
    /// Time one call (or one batch) may run before it is interrupted:
    /// CPU time of the calling thread, with a wall-clock backstop of ten
    /// times this (see `Sandbox::cpu_deadline`).
    pub deadline: Duration,
    /// Linear memory a policy may grow to; beyond it `memory.grow` fails.
    pub max_memory_bytes: usize,
    /// Largest tool-result text passed to extraction.
    pub max_text_bytes: usize,
    /// Largest note a policy may return; a larger one is a malformed answer.
    pub max_note_bytes: usize,
    /// Largest drop reason a policy may return.
    pub max_reason_bytes: usize,
    /// Largest SOUL text a policy may return.
    pub max_soul_bytes: usize,
    /// Most ids extraction may return for one tool result.
    pub max_ids: usize,
    /// Sandboxes that may exist at once (the pooling allocator's slots).
    pub max_concurrent: u32,
    /// Core instances one sandbox may hold. A component is several core
    /// modules (the default policy: the policy itself, the WASI adapter and
    /// canonical-ABI shims); an interpreted policy (Python, JavaScript)
    /// bundles many more. The pool holds this many per concurrent sandbox.
    pub core_instances_per_sandbox: u32,
    /// Linear memories one sandbox may hold.
    pub memories_per_sandbox: u32,
    /// Tables one sandbox may hold.
    pub tables_per_sandbox: u32,
    /// Elements one table may hold; an interpreter's function table is
    /// tens of thousands.
    pub max_table_elements: usize,
    /// Compiled revisions kept in memory, so activating a revision seen
    /// before (a rollback, a swap back, an upload after its dry run) does
    /// not compile it again.
    pub compiled_revisions_kept: usize,
    /// A directory where compiled machine code is kept across processes
    /// (wasmtime's compile cache), keyed by the component's bytes and the
    /// engine's settings: a revision compiled once by `policy check`, a
    /// replica or an earlier run loads in milliseconds instead of compiling
    /// for seconds (an interpreted policy: tens of seconds). The host runs
    /// what it finds there, so the directory needs the protection the
    /// binary has. `None`: every process compiles for itself.
    pub compile_cache: Option<PathBuf>,
}

impl Limits {
    /// The defaults, as a constant so the command-line flags that override
    /// them show the same numbers in `--help`.
    ///
    /// The pool counts are sized for interpreted policies: a Python
    /// component (componentize-py) holds about a dozen core instances and
    /// several memories and tables, a JavaScript one (ComponentizeJS) a few.
    /// Slots are reserved address space, not memory, so the headroom costs
    /// nothing until a sandbox uses it.
    pub const DEFAULT: Limits = Limits {
        deadline: Duration::from_millis(50),
        max_memory_bytes: 64 << 20,
        max_text_bytes: 4 << 20,
        max_note_bytes: 64 << 10,
        max_reason_bytes: 4 << 10,
        max_soul_bytes: 64 << 10,
        max_ids: 64,
        max_concurrent: 64,
        core_instances_per_sandbox: 32,
        memories_per_sandbox: 4,
        tables_per_sandbox: 8,
        max_table_elements: 100_000,
        compiled_revisions_kept: 4,
        compile_cache: None,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A pool limit a component can exceed when it is compiled, found by the
/// engine's own message, with the flag that raises it: an author who hits
/// one learns what to pass, not just that something did not fit.
const POOL_LIMITS: [(&str, &str, &str); 6] = [
    (
        "core module instances",
        "core instances per sandbox",
        "--policy-core-instances",
    ),
    (
        "Wasm linear memories",
        "linear memories per sandbox",
        "--policy-memories",
    ),
    (
        "tables, which exceeds",
        "tables per sandbox",
        "--policy-tables",
    ),
    (
        "minimum element size",
        "elements per table",
        "--policy-table-elements",
    ),
    ("minimum page size", "linear memory", "--policy-memory-mib"),
    ("minimum byte size", "linear memory", "--policy-memory-mib"),
];

/// `message` with the host limit it reports, and the flag that raises it,
/// appended; unchanged if it reports none.
pub(crate) fn name_the_limit(message: String) -> String {
    match POOL_LIMITS
        .iter()
        .find(|(found, _, _)| message.contains(found))
    {
        Some((_, limit, flag)) => {
            format!("{message} (the host's limit on {limit}; raise it with {flag})")
        }
        None => message,
    }
}

/// What a policy's store holds: a WASI context with no capabilities (no
/// files, environment, arguments, network or inherited stdio; frozen clocks),
/// the memory limiter, and the policy's stderr.
pub(crate) struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    memory: MemoryCap,
    stderr: GuestOutput,
}

impl HostState {
    /// True if the policy was refused memory during this evaluation, which
    /// tells a memory bomb apart from any other trap.
    pub(crate) fn memory_denied(&self) -> bool {
        self.memory.denied
    }

    /// The last of what the policy wrote on stderr (an interpreter's
    /// exception), on one line.
    pub(crate) fn guest_stderr(&self) -> Option<String> {
        self.stderr.last_words()
    }
}

/// Caps linear memory and table growth, and remembers a refusal.
struct MemoryCap {
    max_bytes: usize,
    max_table_elements: usize,
    denied: bool,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.max_bytes;
        self.denied |= !allowed;
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= self.max_table_elements)
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A clock stuck at the Unix epoch: a policy gets the time from its input,
/// never from the host, so its answers are reproducible.
struct FrozenClock;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

/// The engine, the linker with capability-free WASI, and the limits.
pub(crate) struct Sandbox {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<HostState>,
    pub(crate) limits: Limits,
    deadline_ticks: u64,
}

impl Sandbox {
    pub(crate) fn new(limits: Limits) -> Result<Arc<Self>, PolicyError> {
        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool(&limits)));
        if let Some(dir) = &limits.compile_cache {
            // wasmtime's cache wants an absolute directory; a relative flag
            // means relative to where the command runs.
            let dir = std::path::absolute(dir).map_err(|e| {
                PolicyError::Engine(format!("compile cache {}: {e}", dir.display()))
            })?;
            let mut cache = CacheConfig::new();
            cache.with_directory(&dir);
            let cache = Cache::new(cache).map_err(|e| {
                PolicyError::Engine(format!("compile cache {}: {e:#}", dir.display()))
            })?;
            config.cache(Some(cache));
        }
        let engine = Engine::new(&config).map_err(|e| PolicyError::Engine(format!("{e:#}")))?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| PolicyError::Engine(format!("{e:#}")))?;
        spawn_epoch_ticker(&engine);
        let deadline_ticks = (limits.deadline.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64;
        Ok(Arc::new(Self {
            engine,
            linker,
            limits,
            deadline_ticks,
        }))
    }

    /// The deadline in epoch ticks.
    pub(crate) fn deadline_ticks(&self) -> u64 {
        self.deadline_ticks
    }

    /// A fresh store with the memory cap and the deadline armed.
    pub(crate) fn store(&self) -> Store<HostState> {
        let memory = MemoryCap {
            max_bytes: self.limits.max_memory_bytes,
            max_table_elements: self.limits.max_table_elements,
            denied: false,
        };
        let stderr = GuestOutput::default();
        let mut store = Store::new(
            &self.engine,
            HostState {
                wasi: wasi_context(stderr.clone()),
                table: ResourceTable::new(),
                memory,
                stderr,
            },
        );
        store.limiter(|state| &mut state.memory);
        store.set_epoch_deadline(self.deadline_ticks);
        store.epoch_deadline_callback(self.cpu_deadline());
        store
    }

    /// What happens when a call reaches its deadline in wall time: it is
    /// interrupted only if the calling thread has also spent the deadline
    /// in CPU time (or the wall-clock backstop has passed). A call that
    /// merely waited for a core, for example while a candidate compiles on
    /// every core during a hot swap, gets the rest of its budget instead of
    /// failing a decision that would have taken microseconds.
    ///
    /// The store must be used on the thread that created it, as every
    /// evaluation in `eval` does.
    fn cpu_deadline(
        &self,
    ) -> impl FnMut(wasmtime::StoreContextMut<'_, HostState>) -> wasmtime::Result<UpdateDeadline>
           + Send
           + Sync
           + 'static {
        let budget = self.limits.deadline;
        let backstop = budget.saturating_mul(WALL_BACKSTOP_FACTOR);
        let started_wall = Instant::now();
        let started_cpu = thread_cpu_time();
        let tick_ms = EPOCH_TICK.as_millis().max(1);
        move |_| {
            let waited = started_wall.elapsed();
            let spent = match (started_cpu, thread_cpu_time()) {
                (Some(start), Some(now)) => now.saturating_sub(start),
                _ => waited,
            };
            if spent >= budget || waited >= backstop {
                return Ok(UpdateDeadline::Interrupt);
            }
            let left = budget.saturating_sub(spent).as_millis();
            Ok(UpdateDeadline::Continue((left / tick_ms).max(1) as u64))
        }
    }
}

/// A call starved of CPU is still interrupted after this many deadlines of
/// wall time, so a host that is overloaded cannot hang on a policy either.
const WALL_BACKSTOP_FACTOR: u32 = 10;

/// CPU time the calling thread has used, where the platform reports it.
#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec, and CLOCK_THREAD_CPUTIME_ID
    // is a clock every supported unix provides; the call only writes `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return None;
    }
    Some(Duration::new(
        u64::try_from(ts.tv_sec).ok()?,
        u32::try_from(ts.tv_nsec).ok()?,
    ))
}

/// Elsewhere the deadline stays a wall-clock one.
#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

/// Sandboxes the shadow revision may hold at once (see `shadow`).
const SHADOW_SANDBOXES: u32 = 1;

/// The pooling allocator sized from the limits: every slot a sandbox may
/// need is reserved once, so instantiation takes slots instead of mapping
/// memory.
///
/// One sandbox more than `max_concurrent` is reserved for the shadow
/// revision (which runs one call at a time), so a shadow never takes a slot
/// the active path counts on.
fn pool(limits: &Limits) -> PoolingAllocationConfig {
    let sandboxes = limits.max_concurrent.saturating_add(SHADOW_SANDBOXES);
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(sandboxes)
        .total_core_instances(sandboxes.saturating_mul(limits.core_instances_per_sandbox))
        .total_memories(sandboxes.saturating_mul(limits.memories_per_sandbox))
        .total_tables(sandboxes.saturating_mul(limits.tables_per_sandbox))
        // One sandbox cannot take the slots of the others.
        .max_core_instances_per_component(limits.core_instances_per_sandbox)
        .max_memories_per_component(limits.memories_per_sandbox)
        .max_tables_per_component(limits.tables_per_sandbox)
        .table_elements(limits.max_table_elements)
        .max_memory_size(limits.max_memory_bytes)
        // Reset the first pages of a slot with memset instead of madvise,
        // keeping them resident: the next sandbox in the slot then starts
        // without page faults on the guest's stack and heap, which dominate
        // a fresh instance's first call.
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(KEEP_RESIDENT_BYTES)
        // Where the kernel can say which of those pages a sandbox wrote
        // (Linux 6.7+), only those are reset, not the whole first MiB.
        .pagemap_scan(Enabled::Auto);
    pool
}

/// The seed of every sandbox's randomness, for both `wasi:random`
/// interfaces. A policy's answer must depend on its input alone, so what
/// it reads as random (Rust's `HashMap` keys, for one) is the same in
/// every sandbox and in every replica. Reading it costs a copy; setting it
/// up saves little, as wasmtime-wasi's builder still seeds its default
/// generators before they are replaced (the whole context is about 1 µs).
const RANDOM_SEED: &[u8; 32] = b"nomos-continue policy sandbox 01";

/// A WASI context that grants nothing: no files, environment, arguments,
/// network or inherited stdio; frozen clocks; fixed-seed randomness. Its
/// stderr is kept, bounded, for failure reports.
fn wasi_context(stderr: GuestOutput) -> WasiCtx {
    WasiCtx::builder()
        .stderr(stderr)
        .wall_clock(FrozenClock)
        .monotonic_clock(FrozenClock)
        .secure_random(Deterministic::new(RANDOM_SEED.to_vec()))
        .insecure_random(Deterministic::new(RANDOM_SEED.to_vec()))
        .insecure_random_seed(u128::from_le_bytes(
            *RANDOM_SEED.first_chunk().unwrap_or(&[0; 16]),
        ))
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build()
}

/// Advances the engine's epoch every tick until the engine is dropped.
fn spawn_epoch_ticker(engine: &Engine) {
    let weak = engine.weak();
    let spawned = thread::Builder::new()
        .name("policy-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                thread::sleep(EPOCH_TICK);
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the policy epoch ticker, deadlines will not fire: {e}");
    }
}
