//! A policy that behaves like the default one on ordinary input and
//! misbehaves when the input asks it to, so it passes vetting (and can be
//! activated) and then fails at call time in every way the host must survive.
//!
//! Triggers:
//! - `extract-links`: `"loop"` spins forever, `"oom"` grows memory
//!   without bound, `"trap"` panics, `"huge"` returns 10,000 ids, `"bad-id"`
//!   returns a non-UUID, `"empty-task"` and `"long-task"` return an MCP
//!   task whose id is empty or 1025 bytes long, `"probe-env"` reports what
//!   WASI granted it (see `probe_env`), `"probe-random"` reports what it
//!   read as random (see `probe_random`), `"alloc-96mib"` takes 96 MiB and
//!   answers no ids.
//! - `decide`/`decide-batch`, by `execution.status`: `"empty-note"`,
//!   `"huge-note"` (one byte over the host's 64 KiB cap), `"loop"`, `"oom"`,
//!   `"trap"`.

#[cfg(target_arch = "wasm32")]
mod component {
    use nomos_policy_default as policy;
    use policy::types as t;

    wit_bindgen::generate!({
        world: "continuation-policy",
        path: "../../wit",
    });

    use exports::nomos::continuation::policy::Guest;
    use nomos::continuation::types as w;

    /// One byte more than the host accepts in a note.
    const HUGE_NOTE: usize = 64 * 1024 + 1;

    struct Hostile;

    impl Guest for Hostile {
        fn extract_links(text: String) -> Vec<w::LinkRef> {
            let task = |id: String| {
                let protocol = w::TaskProtocol::Mcp;
                vec![w::LinkRef::Task(w::TaskRef { protocol, id })]
            };
            let ids = match text.as_str() {
                "empty-task" => return task(String::new()),
                "long-task" => return task("t".repeat(1025)),
                "loop" => spin(),
                "oom" => exhaust_memory(),
                "trap" => panic!("hostile: trap requested"),
                "huge" => (0..10_000u32)
                    .map(|i| format!("00000000-0000-4000-8000-{i:012x}"))
                    .collect(),
                "bad-id" => vec!["not-a-uuid".to_string()],
                "probe-env" => vec![probe_env()],
                "probe-random" => vec![probe_random()],
                "alloc-96mib" => {
                    // Touched once per MiB, not filled: the growth is the
                    // point, and filling 96 MiB would take the deadline.
                    let mut grown: Vec<u8> = Vec::with_capacity(96 << 20);
                    for mib in grown.spare_capacity_mut().chunks_mut(1 << 20) {
                        mib[0].write(1);
                    }
                    std::hint::black_box(&grown);
                    Vec::new()
                }
                _ => return links(policy::links::extract_links(&text)),
            };
            ids.into_iter().map(w::LinkRef::Execution).collect()
        }

        fn classify(status: String) -> w::StatusClass {
            match status.as_str() {
                // A terminal status the decision then traps on.
                "trap" => return w::StatusClass::Terminal(w::Outcome::Failed),
                "classify-trap" => panic!("hostile: classify trap requested"),
                _ => {}
            }
            status_class(policy::classify::classify(&status))
        }

        fn decide(input: w::DecisionInput) -> w::Decision {
            decide_one(input)
        }

        fn decide_batch(inputs: Vec<w::DecisionInput>) -> Vec<w::Decision> {
            inputs.into_iter().map(decide_one).collect()
        }

        fn soul() -> String {
            policy::soul::soul().to_string()
        }

        fn describe() -> w::PolicyInfo {
            w::PolicyInfo {
                name: "hostile".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                contract: policy::CONTRACT.into(),
            }
        }
    }

    fn decide_one(input: w::DecisionInput) -> w::Decision {
        match input.execution.status.as_str() {
            "empty-note" => w::Decision::Continue(String::new()),
            "huge-note" => w::Decision::Continue("x".repeat(HUGE_NOTE)),
            "loop" => spin(),
            "oom" => exhaust_memory(),
            "trap" => panic!("hostile: trap requested"),
            _ => decision(policy::decide::decide(&decision_input(input))),
        }
    }

    /// Busy work the optimiser cannot remove; only the host's epoch deadline
    /// ends it.
    fn spin() -> ! {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    /// Allocates 1 MiB at a time and keeps it, until the allocator fails
    /// (which aborts: a trap after the host refused to grow memory).
    fn exhaust_memory() -> ! {
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            let chunk: Vec<u8> = Vec::with_capacity(1 << 20);
            hoard.push(std::hint::black_box(chunk));
        }
    }

    /// A constant hashed with a fresh `RandomState`, whose keys Rust's
    /// standard library reads from WASI randomness, as a UUID-shaped id.
    fn probe_random() -> String {
        use std::hash::BuildHasher;
        let hash = std::collections::hash_map::RandomState::new().hash_one(0u8);
        format!("00000000-0000-4000-8000-{:012x}", hash & 0xffff_ffff_ffff)
    }

    /// Tries every ambient authority a WASI program might have and reports
    /// what it got as one UUID-shaped id, so the host's id check lets it
    /// through and a test can read it:
    ///
    /// `EEEEEEEE-AAAA-4FFF-8SSS-CCCCCCCCCCCC`: E = environment variables,
    /// A = arguments, F = bit flags (1: `read_dir("/")`, 2: `read_dir(".")`,
    /// 4: `open("/etc/passwd")`, 8: a TCP connect succeeded), S = bytes
    /// read from stdin, C = wall-clock seconds since the epoch. A sandbox
    /// that grants nothing gives `00000000-0000-4000-8000-000000000000`.
    fn probe_env() -> String {
        use std::io::Read;
        let env = std::env::vars().count().min(0xffff_ffff);
        let args = std::env::args().count().min(0xffff);
        let mut flags = 0u32;
        if std::fs::read_dir("/").is_ok() {
            flags |= 1;
        }
        if std::fs::read_dir(".").is_ok() {
            flags |= 2;
        }
        if std::fs::File::open("/etc/passwd").is_ok() {
            flags |= 4;
        }
        if std::net::TcpStream::connect("127.0.0.1:80").is_ok() {
            flags |= 8;
        }
        let mut stdin = Vec::new();
        let _ = std::io::stdin().take(0xfff).read_to_end(&mut stdin);
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
            .min(0xffff_ffff_ffff);
        format!(
            "{env:08x}-{args:04x}-4{flags:03x}-8{:03x}-{clock:012x}",
            stdin.len()
        )
    }

    include!("../../../../guest/src/convert/shared.rs");
    include!("../../../../guest/src/convert/current.rs");

    export!(Hostile);
}

/// The component's `wasi:cli/run`; the tests only call the typed exports.
fn main() {}
