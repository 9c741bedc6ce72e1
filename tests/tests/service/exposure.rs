//! The real binary on a non-loopback address: refused without a token,
//! refused with one over plain HTTP, served over TLS with tokens read from
//! files; and the overrides, which start (and say so in the log).

use std::path::{Path, PathBuf};
use std::process::Command;

use nomos_continue_tests::replica::{Refusal, Replica, ReplicaOptions};
use nomos_continue_tests::wait::{try_within, PATIENCE};
use serde_json::Value;

/// Nothing is sent there: these replicas have no work.
const NO_WEBHOOK: &str = "http://127.0.0.1:9/continue";

fn options(dir: &Path, listen: &str, args: &[&str]) -> ReplicaOptions {
    let url = format!("sqlite:{}", dir.join("exposure.db").display());
    let mut options = ReplicaOptions::new(&url, NO_WEBHOOK, "exposure");
    options.listen = listen.into();
    options.extra_args = args.iter().map(|a| a.to_string()).collect();
    options
}

#[tokio::test]
async fn a_non_loopback_address_without_a_token_is_refused_before_the_database_is_touched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let refusal = Refusal::expect(&options(dir.path(), "0.0.0.0:0", &[])).await;
    assert!(!refusal.status.success());
    assert!(
        refusal.stderr.contains("without a token") && refusal.stderr.contains("--token"),
        "{}",
        refusal.stderr
    );
    assert!(
        !dir.path().join("exposure.db").exists(),
        "a refused start migrated the database"
    );

    let plaintext = Refusal::expect(&options(dir.path(), "0.0.0.0:0", &["--token", "t"])).await;
    assert!(
        plaintext.stderr.contains("plain text") && plaintext.stderr.contains("--tls-cert"),
        "{}",
        plaintext.stderr
    );
}

#[tokio::test]
async fn the_overrides_start_and_are_logged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut replica =
        Replica::start(&options(dir.path(), "0.0.0.0:0", &["--insecure-no-token"])).await;
    let port = replica.addr.port();
    let health = reqwest::get(format!("http://127.0.0.1:{port}/healthz"))
        .await
        .expect("healthz");
    assert_eq!(health.status(), 200);
    replica.kill().await;
    // The line was written before the address; its reader may lag behind.
    let logged = try_within(PATIENCE, async || {
        replica.stderr().contains("INSECURE").then_some(())
    })
    .await;
    assert!(
        logged.is_some(),
        "the override was not logged: {}",
        replica.stderr()
    );
}

/// Runs the openssl CLI with `args` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run openssl");
    assert!(status.success(), "openssl {args:?} failed: {status}");
}

/// A test CA and a certificate for `nomos.test` it signed (a leaf, as
/// webpki requires of a server certificate), made by the openssl CLI.
/// Answers the CA, the leaf and the leaf's key.
fn certificate(dir: &Path) -> (PathBuf, String, String) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "1", "-subj", "/CN=nomos test CA"];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem"]);
    openssl(dir, &ca);
    let mut csr = vec!["req", "-subj", "/CN=nomos.test"];
    csr.extend(ec);
    csr.extend(["-keyout", "key.pem", "-out", "leaf.csr"]);
    openssl(dir, &csr);
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:nomos.test\nbasicConstraints=CA:FALSE\n",
    )
    .expect("write extensions");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "leaf.ext",
            "-out",
            "cert.pem",
        ],
    );
    (
        dir.join("ca.pem"),
        dir.join("cert.pem").display().to_string(),
        dir.join("key.pem").display().to_string(),
    )
}

#[tokio::test]
async fn tls_with_tokens_from_files_serves_and_keeps_the_scopes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, cert, key) = certificate(dir.path());
    let (runtime_file, admin_file) = (dir.path().join("rt"), dir.path().join("adm"));
    std::fs::write(&runtime_file, "runtime-secret\n").expect("write token");
    std::fs::write(&admin_file, "admin-secret\n").expect("write token");
    let args = [
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--token-file",
        &runtime_file.display().to_string(),
        "--admin-token-file",
        &admin_file.display().to_string(),
    ]
    .map(str::to_owned);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let replica = Replica::start(&options(dir.path(), "0.0.0.0:0", &args)).await;
    let port = replica.addr.port();
    let ca = reqwest::Certificate::from_pem(&std::fs::read(&ca).expect("CA")).expect("pem");
    let client = reqwest::Client::builder()
        .add_root_certificate(ca)
        .resolve("nomos.test", ([127, 0, 0, 1], port).into())
        .build()
        .expect("client");
    let base = format!("https://nomos.test:{port}");

    let policy = client
        .get(format!("{base}/v1/policy"))
        .bearer_auth("runtime-secret")
        .send()
        .await
        .expect("GET over TLS");
    assert_eq!(policy.status(), 200);
    let body: Value = policy.json().await.expect("json");
    assert!(body["revision"].is_string(), "{body}");

    let refused = client
        .post(format!("{base}/v1/policy/rollback"))
        .bearer_auth("runtime-secret")
        .send()
        .await
        .expect("POST over TLS");
    assert_eq!(refused.status(), 403);
    let admin = client
        .post(format!("{base}/v1/policy/rollback"))
        .bearer_auth("admin-secret")
        .send()
        .await
        .expect("POST over TLS");
    assert_eq!(admin.status(), 409, "nothing to roll back to, but admitted");

    // Plain HTTP on the TLS port gets no answer an HTTP client accepts.
    let plain = reqwest::get(format!("http://127.0.0.1:{port}/healthz")).await;
    assert!(
        plain.as_ref().map_or(true, |r| !r.status().is_success()),
        "plain HTTP was served: {plain:?}"
    );
}

#[tokio::test]
async fn an_empty_token_file_is_an_error_not_an_open_api() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").expect("write");
    let refusal = Refusal::expect(&options(
        dir.path(),
        "127.0.0.1:0",
        &["--token-file", &empty.display().to_string()],
    ))
    .await;
    assert!(refusal.stderr.contains("is empty"), "{}", refusal.stderr);
}
