//! The continuation policy, run as a sandboxed WebAssembly component.
//!
//! The host meets a policy only through `wit/`: it links no policy crate,
//! not even the default one it embeds (that is built to wasm by the build
//! script and included as bytes).
//!
//! - `types`: the host's types of the contract's data, with the JSON form
//!   golden files and `wasmtime run policy.wasm` use.
//! - `bindings`: one `bindgen!` per contract version served (0.2.0 and
//!   0.1.0) for the `continuation-policy` world.
//! - `convert`: the one conversion: host types into each version's
//!   bindings' types, and answers back.
//! - `instance`: one face on both versions: each export called in the
//!   version the component was built for.
//! - `codec`: the command-line form of each export (stdin, stdout, the
//!   one-line error), which golden files pin.
//! - `sandbox`: the engine (pooling allocator, epoch deadlines, memory cap)
//!   and the capability-free WASI context.
//! - `compiled`: one revision, compiled and type-checked once.
//! - `cache`: compiled revisions kept by hash, so each compiles once.
//! - `eval`: one call in a fresh instance, with the answer checked against
//!   the host's limits.
//! - `guest_output`: the bounded tail of a policy's stderr, for failure
//!   reports.
//! - `vet`: the checks a candidate passes before activation.
//! - `profile`: what a revision costs per sandbox and per decision, for
//!   `policy check`.
//! - `runtime`: the active revision, atomic swaps, fall-back on failures.
//! - `shadow`: a candidate deciding beside the active revision, in a slot
//!   and with counters of its own.
//! - `handle`: the runtime for async callers, each call on the blocking
//!   pool.
//! - `golden`: golden-case files, shared by tests and `policy test`.
//! - `file`: reading a policy file. Watching it, and the database's active
//!   revision, is `crate::deploy`'s job: the sandbox does not know the
//!   database.

mod bindings;
mod cache;
pub mod codec;
mod compiled;
mod convert;
mod eval;
mod file;
pub mod golden;
mod guest_output;
mod handle;
mod instance;
mod profile;
mod runtime;
mod sandbox;
mod shadow;
pub mod types;
mod vet;

pub use compiled::Revision;
pub use compiled::POLICY_EXPORT;
pub use eval::PolicyFailure;
pub use file::read_policy_file;
pub use handle::{PolicyHandle, PolicyTaskFailed};
pub use profile::{Profile, BATCH as PROFILE_BATCH};
#[cfg(feature = "test-support")]
pub use runtime::DEFAULT_FALLBACK_AFTER;
pub use runtime::{Evaluated, PolicyRuntime, PolicyStats};
pub use sandbox::Limits;
#[cfg(feature = "test-support")]
pub use shadow::ShadowPolicy;
pub use shadow::{ShadowPermit, ShadowStats};
#[cfg(feature = "test-support")]
pub use vet::Vetting;

/// The default policy, built from `guest/` by the build script.
pub const BUILTIN_POLICY_WASM: &[u8] = include_bytes!(env!("NOMOS_BUILTIN_POLICY"));

#[cfg(feature = "test-support")]
/// Where the build script left the default policy component, for tools
/// (such as the golden runner) that hand the file to `wasmtime run`.
pub const BUILTIN_POLICY_PATH: &str = env!("NOMOS_BUILTIN_POLICY");

/// Why a policy could not be loaded or activated.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The engine itself could not be configured.
    #[error("policy engine: {0}")]
    Engine(String),
    /// The bytes are not a component of the `continuation-policy` world.
    #[error("invalid policy: {0}")]
    Invalid(String),
    /// The component loads but failed its checks; each reason is listed.
    #[error("policy rejected: {}", .0.join("; "))]
    Rejected(Vec<String>),
    #[error("cannot read policy {path}: {source}")]
    /// A policy file could not be read.
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

impl PolicyError {
    /// Every reason, one per entry, for reports and API error bodies.
    pub fn reasons(&self) -> Vec<String> {
        match self {
            PolicyError::Rejected(reasons) => reasons.clone(),
            other => vec![other.to_string()],
        }
    }
}
