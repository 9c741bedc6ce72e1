//! One policy revision, compiled and type-checked once, ready to be
//! instantiated cheaply for every evaluation.

use std::fmt;

use sha2::{Digest, Sha256};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::Component;

use super::instance::{ContractVersion, PolicyPre};
use super::sandbox::{name_the_limit, Sandbox};
use super::PolicyError;

/// The interface a policy should export, version included: the current
/// contract. A policy exporting `nomos:continuation/policy@0.1.x` is still
/// served (see [`ContractVersion`]).
pub const POLICY_EXPORT: &str = "nomos:continuation/policy@0.2.0";

/// The previous interface, still served.
const LEGACY_EXPORT: &str = "nomos:continuation/policy@0.1.0";

/// A policy revision: the sha256 of its bytes, in hex. Recorded with every
/// decision so a ledger row says which policy wrote its note.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Revision(pub String);

impl Revision {
    /// The revision of these component bytes (their SHA-256, hex).
    pub fn of(bytes: &[u8]) -> Self {
        Revision(hex::encode(Sha256::digest(bytes)))
    }

    /// The first 12 hex digits, for logs and summaries.
    pub fn short(&self) -> &str {
        &self.0[..self.0.len().min(12)]
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A compiled, type-checked policy.
pub struct CompiledPolicy {
    pub revision: Revision,
    /// Built once per revision: instantiation then skips all linking work.
    /// Of the contract version the component exports.
    pub(crate) pre: PolicyPre,
}

impl CompiledPolicy {
    /// Compiles `bytes` (of revision `revision`) and checks them against
    /// the `continuation-policy` world of the contract version it exports
    /// (0.2 or 0.1); a mismatch names what is missing. A
    /// component the sandbox's pool could never hold (more memories, tables
    /// or core instances than `Limits` gives one sandbox) is refused here
    /// too, by the engine, with the count and the limit.
    pub(crate) fn compile(
        sandbox: &Sandbox,
        revision: Revision,
        bytes: &[u8],
    ) -> Result<Self, PolicyError> {
        let component = Component::new(&sandbox.engine, bytes).map_err(|e| {
            PolicyError::Invalid(name_the_limit(format!(
                "not a loadable WebAssembly component: {e:#}"
            )))
        })?;
        let version = check_exports(sandbox, &component)?;
        let instance_pre = sandbox.linker.instantiate_pre(&component).map_err(|e| {
            PolicyError::Invalid(format!(
                "the policy imports something the sandbox does not provide: {e:#}"
            ))
        })?;
        let pre = PolicyPre::new(version, instance_pre).map_err(|e| {
            PolicyError::Invalid(format!(
                "the policy does not match the {}0 interface: {e:#}",
                version.export_prefix()
            ))
        })?;
        Ok(Self { revision, pre })
    }
}

/// The contract version a component exports (the newest, should it export
/// both); refuses a component that exports none this host serves, naming
/// what it exports instead (another version of the contract, another
/// world).
fn check_exports(sandbox: &Sandbox, component: &Component) -> Result<ContractVersion, PolicyError> {
    let ty = component.component_type();
    let exports: Vec<String> = ty
        .exports(&sandbox.engine)
        .filter(|(_, item)| matches!(item.ty, ComponentItem::ComponentInstance(_)))
        .map(|(name, _)| name.to_string())
        .collect();
    let served = ContractVersion::ALL.into_iter().find(|version| {
        exports
            .iter()
            .any(|name| name.starts_with(version.export_prefix()))
    });
    if let Some(version) = served {
        return Ok(version);
    }
    let same_contract: Vec<&String> = exports
        .iter()
        .filter(|name| name.starts_with("nomos:continuation/policy"))
        .collect();
    let reason = match same_contract.first() {
        Some(other) => format!(
            "the policy exports {other}, but this host speaks {POLICY_EXPORT} (and still {LEGACY_EXPORT}): rebuild it against wit/ of this host"
        ),
        None => format!(
            "the policy does not export {POLICY_EXPORT} (it exports: {}); is it built for the continuation-policy world?",
            if exports.is_empty() { "nothing".to_string() } else { exports.join(", ") }
        ),
    };
    Err(PolicyError::Invalid(reason))
}
