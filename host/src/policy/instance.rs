//! One face on the contract versions a policy may be built against.
//!
//! Why: `eval` checks answers against the host's limits and should not care
//! whether a policy speaks 0.2.0 or 0.1.0. Here each export is called in
//! the version the component was built for and its answer turned into the
//! host's types: a 0.1.0 policy's execution ids become
//! [`t::LinkRef::Execution`], its classes map one to one, and an
//! execution's task is not passed to it (0.1.0 has no such field).

use wasmtime::component::InstancePre;
use wasmtime::Store;

use super::bindings::{v1, v2};
use super::convert;
use super::sandbox::HostState;
use super::types as t;

/// The contract versions this host serves, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ContractVersion {
    /// `nomos:continuation@0.2.x`.
    V0_2,
    /// `nomos:continuation@0.1.x`.
    V0_1,
}

impl ContractVersion {
    /// Newest first, as a component's exports are matched.
    pub(crate) const ALL: [ContractVersion; 2] = [ContractVersion::V0_2, ContractVersion::V0_1];

    /// The export a component of this version has, up to its patch
    /// number (for 0.x, the minor is the compatibility boundary).
    pub(crate) fn export_prefix(self) -> &'static str {
        match self {
            ContractVersion::V0_2 => "nomos:continuation/policy@0.2.",
            ContractVersion::V0_1 => "nomos:continuation/policy@0.1.",
        }
    }

    /// What `describe` must report for this version, up to the patch.
    pub(crate) fn contract_prefix(self) -> &'static str {
        match self {
            ContractVersion::V0_2 => "nomos:continuation@0.2.",
            ContractVersion::V0_1 => "nomos:continuation@0.1.",
        }
    }
}

/// A policy's components, linked and type-checked for its version.
pub(crate) enum PolicyPre {
    V2(v2::ContinuationPolicyPre<HostState>),
    V1(v1::ContinuationPolicyPre<HostState>),
}

/// One instance of a policy, in one store.
pub(crate) enum PolicyInstance {
    V2(v2::ContinuationPolicy),
    V1(v1::ContinuationPolicy),
}

impl PolicyPre {
    /// Checks `pre` against the bindings of `version`.
    pub(crate) fn new(
        version: ContractVersion,
        pre: InstancePre<HostState>,
    ) -> wasmtime::Result<Self> {
        Ok(match version {
            ContractVersion::V0_2 => PolicyPre::V2(v2::ContinuationPolicyPre::new(pre)?),
            ContractVersion::V0_1 => PolicyPre::V1(v1::ContinuationPolicyPre::new(pre)?),
        })
    }

    /// The version the policy was built against.
    pub(crate) fn version(&self) -> ContractVersion {
        match self {
            PolicyPre::V2(_) => ContractVersion::V0_2,
            PolicyPre::V1(_) => ContractVersion::V0_1,
        }
    }

    /// A fresh instance in `store`.
    pub(crate) fn instantiate(
        &self,
        store: &mut Store<HostState>,
    ) -> wasmtime::Result<PolicyInstance> {
        Ok(match self {
            PolicyPre::V2(pre) => PolicyInstance::V2(pre.instantiate(store)?),
            PolicyPre::V1(pre) => PolicyInstance::V1(pre.instantiate(store)?),
        })
    }
}

impl PolicyInstance {
    /// What a tool result names (0.1.0: its execution ids).
    pub(crate) fn extract_links(
        &self,
        store: &mut Store<HostState>,
        text: &str,
    ) -> wasmtime::Result<Vec<t::LinkRef>> {
        Ok(match self {
            PolicyInstance::V2(p) => p
                .nomos_continuation_policy()
                .call_extract_links(store, text)?
                .into_iter()
                .map(convert::v2::link)
                .collect(),
            PolicyInstance::V1(p) => p
                .nomos_continuation_policy()
                .call_extract_execution_ids(store, text)?
                .into_iter()
                .map(t::LinkRef::Execution)
                .collect(),
        })
    }

    /// The class of a status.
    pub(crate) fn classify(
        &self,
        store: &mut Store<HostState>,
        status: &str,
    ) -> wasmtime::Result<t::StatusClass> {
        Ok(match self {
            PolicyInstance::V2(p) => convert::v2::status_class(
                p.nomos_continuation_policy().call_classify(store, status)?,
            ),
            PolicyInstance::V1(p) => convert::v1::status_class(
                p.nomos_continuation_policy().call_classify(store, status)?,
            ),
        })
    }

    /// The decisions for `inputs`, in order.
    pub(crate) fn decide_batch(
        &self,
        store: &mut Store<HostState>,
        inputs: &[t::DecisionInput],
    ) -> wasmtime::Result<Vec<t::Decision>> {
        Ok(match self {
            PolicyInstance::V2(p) => {
                let inputs: Vec<_> = inputs.iter().map(convert::v2::decision_input).collect();
                let answers = p
                    .nomos_continuation_policy()
                    .call_decide_batch(store, &inputs)?;
                answers.into_iter().map(convert::v2::decision).collect()
            }
            PolicyInstance::V1(p) => {
                let inputs: Vec<_> = inputs.iter().map(convert::v1::decision_input).collect();
                let answers = p
                    .nomos_continuation_policy()
                    .call_decide_batch(store, &inputs)?;
                answers.into_iter().map(convert::v1::decision).collect()
            }
        })
    }

    /// One decision through `decide` (the benchmark's call).
    pub(crate) fn decide(
        &self,
        store: &mut Store<HostState>,
        input: &t::DecisionInput,
    ) -> wasmtime::Result<t::Decision> {
        Ok(match self {
            PolicyInstance::V2(p) => convert::v2::decision(
                p.nomos_continuation_policy()
                    .call_decide(store, &convert::v2::decision_input(input))?,
            ),
            PolicyInstance::V1(p) => convert::v1::decision(
                p.nomos_continuation_policy()
                    .call_decide(store, &convert::v1::decision_input(input))?,
            ),
        })
    }

    /// The SOUL text.
    pub(crate) fn soul(&self, store: &mut Store<HostState>) -> wasmtime::Result<String> {
        match self {
            PolicyInstance::V2(p) => p.nomos_continuation_policy().call_soul(store),
            PolicyInstance::V1(p) => p.nomos_continuation_policy().call_soul(store),
        }
    }

    /// The policy's name, version and contract.
    pub(crate) fn describe(&self, store: &mut Store<HostState>) -> wasmtime::Result<t::PolicyInfo> {
        Ok(match self {
            PolicyInstance::V2(p) => {
                convert::v2::policy_info(p.nomos_continuation_policy().call_describe(store)?)
            }
            PolicyInstance::V1(p) => {
                convert::v1::policy_info(p.nomos_continuation_policy().call_describe(store)?)
            }
        })
    }
}
