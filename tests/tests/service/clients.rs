//! The runtime's clients in `clients/` against the real binary: each
//! language's tests (the API's operations, its refusals as typed problems,
//! a retried write under one key, the webhook receiver against the
//! reference signer, the drift check against `docs/openapi.json`) and its
//! example, which plays the seed's story and prints the note the agent
//! would be re-invoked with, from a continuation whose signature it
//! checked.

use std::path::{Path, PathBuf};
use std::process::Output;

use nomos_continue_tests::python::{python_of, Venv};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};

const TOKEN: &str = "clients-runtime-token";
/// 32 bytes of key, as `serve --webhook-secret` takes them.
const SECRET: &str = "whsec_ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// `serve` on a fresh SQLite file, its webhook signed with [`SECRET`] and
/// pointed at `port`, where the example's receiver will listen (a
/// delivery made before it listens is retried).
async fn serve(port: u16, dir: &Path) -> Replica {
    let database = format!("sqlite:{}", dir.join("clients.db").display());
    let hook = format!("http://127.0.0.1:{port}/hooks/nomos");
    let mut options = ReplicaOptions::new(&database, &hook, "clients");
    options.token = Some(TOKEN.into());
    options.extra_args = vec![
        "--token".into(),
        TOKEN.into(),
        "--webhook-secret".into(),
        SECRET.into(),
    ];
    Replica::start(&options).await
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    socket.local_addr().expect("its address").port()
}

fn report(what: &str, output: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// One language's client: its tests, then its example, each run by
/// `program` in `clients/<dir>` against a fresh `serve`, with `env`
/// beside the story's own variables. The tests must not skip.
async fn tests_and_story(
    program: &Path,
    dir: &str,
    tests: &[&str],
    story: &[&str],
    env: &[(&str, String)],
) {
    let scratch = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let replica = serve(port, scratch.path()).await;
    let root = workspace().join("clients").join(dir);
    let run = |args: &[&str]| {
        let mut command = std::process::Command::new(program);
        command
            .args(args)
            .current_dir(&root)
            .env("NOMOS_URL", format!("http://{}", replica.addr))
            .env("NOMOS_TOKEN", TOKEN)
            .env("NOMOS_WEBHOOK_SECRET", SECRET)
            .env("RECEIVER_PORT", port.to_string())
            .env("CI", "true");
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().expect("run the client's command")
    };
    let tested = run(tests);
    assert!(tested.status.success(), "{}", report("the tests", &tested));
    let said = String::from_utf8_lossy(&tested.stdout);
    let skipped =
        (said.contains("skipped") && !said.contains("# skipped 0")) || said.contains("--- SKIP");
    assert!(!skipped, "nothing skips: {said}");

    let played = run(story);
    assert!(played.status.success(), "{}", report("the story", &played));
    let printed = String::from_utf8_lossy(&played.stdout);
    assert!(printed.contains("(signature checked)"), "{printed}");
    let note = printed
        .split("note the agent is re-invoked with:\n")
        .nth(1)
        .unwrap_or_default();
    assert!(note.contains("Connection refused"), "the note: {printed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_passes_its_tests_and_plays_the_story() {
    let Some(python) = python_of(Venv::Main) else {
        return;
    };
    let src = workspace().join("clients/python/src");
    let tests = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"];
    let env = [("PYTHONPATH", src.display().to_string())];
    tests_and_story(&python, "python", &tests, &["examples/story.py"], &env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_client_passes_its_tests_and_plays_the_story() {
    let node = PathBuf::from("node");
    let tests = ["--test", "test/"];
    tests_and_story(&node, "typescript", &tests, &["examples/story.js"], &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_go_client_passes_its_tests_and_plays_the_story() {
    // Debian's golang-go (1.19), which `.ci/run` installs; the standard
    // library only, so no module registry is asked (GOPROXY=off).
    let go = PathBuf::from("/usr/bin/go");
    if !go.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but Go is not installed (/usr/bin/go)"
        );
        return;
    }
    let env = [
        ("GOPROXY", "off".to_owned()),
        ("GOFLAGS", "-mod=mod".to_owned()),
    ];
    let tests = ["test", "-v", "-count=1", "./..."];
    tests_and_story(&go, "go", &tests, &["run", "./examples/story"], &env).await;
}
