//! Calling one compiled policy in a fresh sandbox, and checking its answer
//! against the host's limits before anyone acts on it.

use uuid::Uuid;
use wasmtime::Store;

use super::compiled::CompiledPolicy;
use super::instance::PolicyInstance;
use super::sandbox::{HostState, Sandbox};
use super::types as t;

/// Why a policy call produced no usable answer. The caller falls back to a
/// conservative result (no automatic continuation) and counts the failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyFailure {
    /// The call ran past its deadline and was interrupted.
    #[error("policy ran past its {0} ms CPU deadline (the host's limit; raise it with --policy-deadline)")]
    Timeout(u128),
    /// The policy asked for more memory than its cap allows.
    #[error("policy exhausted its memory cap of {0} bytes (the host's limit; raise it with --policy-memory-mib)")]
    MemoryExhausted(usize),
    /// The policy trapped (a panic, `unreachable`, an out-of-bounds access).
    #[error("policy trapped: {0}")]
    Trap(String),
    /// The policy answered, but the answer breaks the contract or the host's
    /// limits (a note over the cap, a non-UUID id, a bad task id, an empty
    /// note).
    #[error("policy answer is malformed: {0}")]
    Malformed(String),
    /// The sandbox could not be set up (for example, every pool slot busy).
    #[error("policy could not be instantiated: {0}")]
    Instantiate(String),
    /// The input is over the host's cap; the policy was not called.
    #[error("input too large for the policy: {0} bytes (limit {1})")]
    InputTooLarge(usize, usize),
}

impl PolicyFailure {
    /// True for failures that are the policy's fault (they count towards
    /// falling back to the last good revision).
    pub fn is_policy_fault(&self) -> bool {
        !matches!(
            self,
            PolicyFailure::InputTooLarge(..) | PolicyFailure::Instantiate(_)
        )
    }

    /// True for a shortage (no sandbox slot was free): it says nothing
    /// about the input, so the call is made again later, and its "answer"
    /// is never kept.
    pub fn is_shortage(&self) -> bool {
        matches!(self, PolicyFailure::Instantiate(_))
    }

    /// Every [`PolicyFailure::kind`], so `/metrics` can show each at 0
    /// before the first failure (an alert's `rate()` needs the series).
    pub const KINDS: [&'static str; 6] = [
        "timeout",
        "memory",
        "trap",
        "malformed",
        "instantiate",
        "input_too_large",
    ];

    /// A short label for metrics (one of [`PolicyFailure::KINDS`]).
    pub fn kind(&self) -> &'static str {
        match self {
            PolicyFailure::Timeout(_) => "timeout",
            PolicyFailure::MemoryExhausted(_) => "memory",
            PolicyFailure::Trap(_) => "trap",
            PolicyFailure::Malformed(_) => "malformed",
            PolicyFailure::Instantiate(_) => "instantiate",
            PolicyFailure::InputTooLarge(..) => "input_too_large",
        }
    }
}

/// Runs `call` on a fresh instance of `policy` and maps every wasmtime
/// error to a [`PolicyFailure`].
fn with_instance<T>(
    sandbox: &Sandbox,
    policy: &CompiledPolicy,
    call: impl FnOnce(&mut Store<HostState>, &PolicyInstance) -> wasmtime::Result<T>,
) -> Result<T, PolicyFailure> {
    let mut store = sandbox.store();
    let instance = policy
        .pre
        .instantiate(&mut store)
        .map_err(|e| classify_error(sandbox, &store, &e, true))?;
    call(&mut store, &instance).map_err(|e| classify_error(sandbox, &store, &e, false))
}

fn classify_error(
    sandbox: &Sandbox,
    store: &Store<HostState>,
    e: &wasmtime::Error,
    instantiating: bool,
) -> PolicyFailure {
    if store.data().memory_denied() {
        return PolicyFailure::MemoryExhausted(sandbox.limits.max_memory_bytes);
    }
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => {
            PolicyFailure::Timeout(sandbox.limits.deadline.as_millis())
        }
        Some(trap) => PolicyFailure::Trap(with_stderr(store, trap_line(trap, e))),
        None if instantiating => PolicyFailure::Instantiate(one_line(e)),
        None => PolicyFailure::Trap(with_stderr(store, one_line(e))),
    }
}

/// A trap's line with what the guest last wrote on stderr: an interpreted
/// policy's exception is there, and a bare `unreachable` says nothing.
fn with_stderr(store: &Store<HostState>, line: String) -> String {
    match store.data().guest_stderr() {
        Some(words) => format!("{line}; the policy wrote: {words}"),
        None => line,
    }
}

/// The trap and the export it happened in, on one line: a failure is
/// reported in logs, rejection reasons and API bodies, where a multi-line
/// wasm backtrace (which `{e:#}` includes) does not belong.
fn trap_line(trap: &wasmtime::Trap, e: &wasmtime::Error) -> String {
    let export = e
        .downcast_ref::<wasmtime::WasmBacktrace>()
        .and_then(|bt| bt.frames().last())
        .and_then(|frame| frame.func_name().map(str::to_string));
    match export {
        Some(name) => format!("{trap} in {name}"),
        None => trap.to_string(),
    }
}

/// An error chain on one line, without any backtrace.
fn one_line(e: &wasmtime::Error) -> String {
    let text = if e.downcast_ref::<wasmtime::WasmBacktrace>().is_some() {
        e.root_cause().to_string()
    } else {
        format!("{e:#}")
    };
    text.replace('\n', " ")
}

/// True if `id` is a UUID written the way the store writes one: hyphenated
/// and lowercase. Any other spelling (braces, a `urn:` prefix, upper case)
/// would name the same execution under a second key.
fn is_canonical_uuid(id: &str) -> bool {
    Uuid::try_parse(id)
        .is_ok_and(|parsed| parsed.hyphenated().encode_lower(&mut Uuid::encode_buffer()) == id)
}

/// The most bytes of a protocol's task id (as `nomos_link_data` holds it).
pub(crate) const MAX_TASK_ID_BYTES: usize = 1024;

/// What a tool result names, checked: execution ids canonical UUIDs, task
/// ids 1 to [`MAX_TASK_ID_BYTES`] bytes, at most the host's cap of ids in
/// all, duplicates removed (first appearance kept).
pub(crate) fn extract_links(
    sandbox: &Sandbox,
    policy: &CompiledPolicy,
    text: &str,
) -> Result<Vec<t::LinkRef>, PolicyFailure> {
    let limit = sandbox.limits.max_text_bytes;
    if text.len() > limit {
        return Err(PolicyFailure::InputTooLarge(text.len(), limit));
    }
    let links = with_instance(sandbox, policy, |store, p| p.extract_links(store, text))?;
    if links.len() > sandbox.limits.max_ids {
        return Err(PolicyFailure::Malformed(format!(
            "{} ids returned (limit {})",
            links.len(),
            sandbox.limits.max_ids
        )));
    }
    let mut unique: Vec<t::LinkRef> = Vec::with_capacity(links.len());
    for link in links {
        check_link(&link)?;
        if !unique.contains(&link) {
            unique.push(link);
        }
    }
    Ok(unique)
}

/// Refuses an execution id in another spelling than the store's, and a
/// task id that is empty or over [`MAX_TASK_ID_BYTES`].
fn check_link(link: &t::LinkRef) -> Result<(), PolicyFailure> {
    let shown = |id: &str| id.chars().take(64).collect::<String>();
    match link {
        t::LinkRef::Execution(id) if !is_canonical_uuid(id) => Err(PolicyFailure::Malformed(
            format!("{:?} is not a canonical lowercase UUID", shown(id)),
        )),
        t::LinkRef::Task(task) if task.id.is_empty() => {
            Err(PolicyFailure::Malformed("an empty task id".into()))
        }
        t::LinkRef::Task(task) if task.id.len() > MAX_TASK_ID_BYTES => {
            Err(PolicyFailure::Malformed(format!(
                "task id {:?}… of {} bytes (limit {MAX_TASK_ID_BYTES})",
                shown(&task.id),
                task.id.len()
            )))
        }
        _ => Ok(()),
    }
}

/// Classifies a status string.
pub(crate) fn classify(
    sandbox: &Sandbox,
    policy: &CompiledPolicy,
    status: &str,
) -> Result<t::StatusClass, PolicyFailure> {
    let limit = sandbox.limits.max_text_bytes;
    if status.len() > limit {
        return Err(PolicyFailure::InputTooLarge(status.len(), limit));
    }
    with_instance(sandbox, policy, |store, p| p.classify(store, status))
}

/// Decides a batch in one sandbox; every decision is checked.
pub(crate) fn decide_batch(
    sandbox: &Sandbox,
    policy: &CompiledPolicy,
    inputs: &[t::DecisionInput],
) -> Result<Vec<t::Decision>, PolicyFailure> {
    let size: usize = inputs
        .iter()
        .map(|i| i.execution.result.len() + i.execution.status.len())
        .sum();
    let limit = sandbox.limits.max_text_bytes;
    if size > limit {
        return Err(PolicyFailure::InputTooLarge(size, limit));
    }
    let decisions = with_instance(sandbox, policy, |store, p| p.decide_batch(store, inputs))?;
    if decisions.len() != inputs.len() {
        return Err(PolicyFailure::Malformed(format!(
            "{} decisions for {} inputs",
            decisions.len(),
            inputs.len()
        )));
    }
    decisions
        .into_iter()
        .map(|d| check_decision(sandbox, d))
        .collect()
}

fn check_decision(sandbox: &Sandbox, decision: t::Decision) -> Result<t::Decision, PolicyFailure> {
    let limits = &sandbox.limits;
    match &decision {
        t::Decision::Continue { note } if note.trim().is_empty() => {
            Err(PolicyFailure::Malformed("empty note".into()))
        }
        t::Decision::Continue { note } if note.len() > limits.max_note_bytes => {
            Err(PolicyFailure::Malformed(format!(
                "note of {} bytes (limit {})",
                note.len(),
                limits.max_note_bytes
            )))
        }
        t::Decision::Drop { reason } if reason.len() > limits.max_reason_bytes => {
            Err(PolicyFailure::Malformed(format!(
                "drop reason of {} bytes (limit {})",
                reason.len(),
                limits.max_reason_bytes
            )))
        }
        _ => Ok(decision),
    }
}

/// The SOUL text, size-checked.
pub(crate) fn soul(sandbox: &Sandbox, policy: &CompiledPolicy) -> Result<String, PolicyFailure> {
    let soul = with_instance(sandbox, policy, |store, p| p.soul(store))?;
    if soul.len() > sandbox.limits.max_soul_bytes {
        return Err(PolicyFailure::Malformed(format!(
            "SOUL text of {} bytes (limit {})",
            soul.len(),
            sandbox.limits.max_soul_bytes
        )));
    }
    Ok(soul)
}

/// The policy's name and version, size-checked.
pub(crate) fn describe(
    sandbox: &Sandbox,
    policy: &CompiledPolicy,
) -> Result<t::PolicyInfo, PolicyFailure> {
    let info = with_instance(sandbox, policy, |store, p| p.describe(store))?;
    if info.name.len() + info.version.len() + info.contract.len() > 1024 {
        return Err(PolicyFailure::Malformed(
            "describe() answer over 1 KiB".into(),
        ));
    }
    Ok(info)
}

/// Benchmark hook: one fresh store and instance, no call.
pub(crate) fn instantiate_only(
    sandbox: &Sandbox,
    policy: &CompiledPolicy,
) -> Result<(), PolicyFailure> {
    with_instance(sandbox, policy, |_, _| Ok(()))
}

/// Benchmark hook: one instance, `n` calls of `decide` on it, each with a
/// fresh deadline. Production never reuses an instance (state could leak
/// from one batch to the next); this measures the call itself.
pub(crate) fn live_decisions(
    sandbox: &Sandbox,
    policy: &CompiledPolicy,
    n: u64,
    input: &t::DecisionInput,
) -> Result<(), PolicyFailure> {
    with_instance(sandbox, policy, |store, p| {
        for _ in 0..n {
            store.set_epoch_deadline(sandbox.deadline_ticks());
            p.decide(store, input)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::is_canonical_uuid;

    #[test]
    fn only_the_stored_spelling_of_a_uuid_is_canonical() {
        let id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
        assert!(is_canonical_uuid(id));
        for other in [
            "3F2504E0-4F89-11D3-9A0C-0305E82C3301",
            "3f2504e04f8911d39a0c0305e82c3301",
            "{3f2504e0-4f89-11d3-9a0c-0305e82c3301}",
            "urn:uuid:3f2504e0-4f89-11d3-9a0c-0305e82c3301",
            "3f2504e0-4f89-11d3-9a0c-0305e82c330",
            "",
        ] {
            assert!(!is_canonical_uuid(other), "{other}");
        }
    }
}
