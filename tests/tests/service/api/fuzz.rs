//! Random requests against every route: random methods, paths (real route
//! shapes with random segments and encodings), headers (tokens of either
//! scope or none, content types and encodings) and bodies (valid, mutated,
//! binary, deeply nested, over the limits).
//!
//! It passes when no answer is a 5xx other than 503 with `Retry-After`, no
//! request loses its connection (a handler panic drops it), and every error
//! body is JSON with an `"error"`. Seeded, so a failure is replayed with
//! the seed it prints; `NOMOS_FUZZ_REQUESTS` and `NOMOS_FUZZ_SEED` change
//! the count and the seed.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;
use uuid::Uuid;

use nomos_continue::policy::BUILTIN_POLICY_WASM;
use nomos_continue_tests::api::ServedApi;
use nomos_continue_tests::db::fresh_sqlite;

const RUNTIME: &str = "fuzz-runtime";
const ADMIN: &str = "fuzz-admin";

const METHODS: &[&str] = &[
    "GET", "GET", "POST", "POST", "PUT", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "FROB",
];

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A path segment where an id goes: mostly valid, often not.
fn segment(rng: &mut StdRng, known: &[Uuid]) -> String {
    match rng.gen_range(0..10) {
        0..=3 => known
            .choose(rng)
            .copied()
            .unwrap_or_else(Uuid::new_v4)
            .to_string(),
        4 => Uuid::new_v4().to_string(),
        5 => Uuid::new_v4().simple().to_string(),
        6 => "%00%FF%C0%80".into(),
        7 => "x".repeat(rng.gen_range(1..5000)),
        8 => "..%2F..%2Fetc%2Fpasswd".into(),
        _ => "%E2%82%AC%F0%9F%92%A9".into(),
    }
}

/// A path and the method its route takes.
fn path(rng: &mut StdRng, known: &[Uuid]) -> (String, &'static str) {
    let id = segment(rng, known);
    match rng.gen_range(0..13) {
        0 | 1 => (format!("/v1/sessions/{id}/tool-results"), "POST"),
        2 => (format!("/v1/sessions/{id}/approvals"), "POST"),
        3 => (format!("/v1/sessions/{id}/turns"), "POST"),
        4 => (format!("/v1/sessions/{id}"), "GET"),
        5 | 6 => (format!("/v1/executions/{id}"), "PUT"),
        7 => (format!("/v1/deliveries/{id}/retry"), "POST"),
        8 => (
            "/v1/policy".into(),
            *["GET", "PUT"].choose(rng).unwrap_or(&"GET"),
        ),
        9 => ("/v1/policy/rollback".into(), "POST"),
        10 => ("/metrics".into(), "GET"),
        11 => ("/healthz".into(), "GET"),
        _ => (format!("/v1/{id}/{}", segment(rng, known)), "GET"),
    }
}

/// A body: valid shapes for some route, mutated, or noise.
fn body(rng: &mut StdRng, known: &[Uuid]) -> Vec<u8> {
    let id = known.choose(rng).copied().unwrap_or_else(Uuid::new_v4);
    let status = ["running", "completed", "failed", "weird"]
        .choose(rng)
        .copied();
    let role = ["user", "assistant", "system", "tool"].choose(rng).copied();
    let valid = [
        json!({ "text": format!("started execution {id}") }),
        json!({ "decision": "approve", "minutes": rng.gen_range(-5..40) }),
        json!({ "decision": "deny" }),
        json!({ "status": status, "result": "out" }),
        json!({ "role": role, "content": "hi" }),
        json!({ "status": "completed", "result": null }),
        json!({ "minutes": 9_223_372_036_854_775_807_i64, "decision": "approve" }),
    ];
    match rng.gen_range(0..12) {
        0..=4 => valid
            .choose(rng)
            .map(|v| v.to_string())
            .unwrap_or_default()
            .into_bytes(),
        5 => {
            // A valid body with one byte changed.
            let mut bytes = valid
                .choose(rng)
                .map(|v| v.to_string())
                .unwrap_or_default()
                .into_bytes();
            if !bytes.is_empty() {
                let at = rng.gen_range(0..bytes.len());
                bytes[at] = rng.gen();
            }
            bytes
        }
        6 => (0..rng.gen_range(0..512)).map(|_| rng.gen()).collect(),
        7 => format!("{}{}", "[".repeat(5000), "]".repeat(5000)).into_bytes(),
        8 => Vec::new(),
        9 => json!({ "text": "\u{0}nul", "status": "x\u{0}", "content": "\u{0}" })
            .to_string()
            .into_bytes(),
        10 => BUILTIN_POLICY_WASM[..rng.gen_range(0..BUILTIN_POLICY_WASM.len().min(4096))].to_vec(),
        _ => vec![b'{'; rng.gen_range(1..70_000)],
    }
}

#[tokio::test]
async fn no_request_gets_a_5xx_a_panic_or_a_non_json_error() {
    let requests = env_or("NOMOS_FUZZ_REQUESTS", 5000);
    let seed = env_or("NOMOS_FUZZ_SEED", 0x006e_6f6d_6f73);
    let mut rng = StdRng::seed_from_u64(seed);
    let (store, _dir) = fresh_sqlite().await;
    let api = ServedApi::start_scoped(store, Some(RUNTIME), Some(ADMIN)).await;
    let client = reqwest::Client::new();
    let known: Vec<Uuid> = (0..8).map(|_| Uuid::new_v4()).collect();
    let mut by_status = std::collections::BTreeMap::<u16, u64>::new();

    for n in 0..requests {
        let (mut path, natural) = path(&mut rng, &known);
        if rng.gen_bool(0.2) {
            let query = [
                "limit=0",
                "limit=1",
                "limit=500",
                "limit=501",
                "limit=-1",
                "limit=abc",
                "links_cursor=l1.garbage",
                "deliveries_cursor=n1.AAAA",
                "notices_cursor=%FF%00",
                "unknown=1",
                "limit=1&limit=2",
            ];
            path = format!("{path}?{}", query.choose(&mut rng).copied().unwrap_or("x"));
        }
        // Mostly the route's own method, so most requests reach a handler.
        let method = if rng.gen_bool(0.75) {
            natural
        } else {
            METHODS.choose(&mut rng).copied().unwrap_or("GET")
        };
        let body = body(&mut rng, &known);
        let mut request = client.request(
            reqwest::Method::from_bytes(method.as_bytes()).expect("method"),
            format!("{}{path}", api.base),
        );
        match rng.gen_range(0..10) {
            0 => {}
            1 => request = request.bearer_auth("wrong"),
            2..=5 => request = request.bearer_auth(RUNTIME),
            6..=8 => request = request.bearer_auth(ADMIN),
            _ => request = request.header("authorization", "Basic Zm9vOmJhcg=="),
        }
        let content_type = [
            "application/json",
            "application/json; charset=latin1",
            "text/plain",
            "application/wasm",
            "multipart/form-data; boundary=x",
        ];
        if rng.gen_bool(0.7) {
            request = request.header(
                "content-type",
                *content_type.choose(&mut rng).unwrap_or(&"x"),
            );
        }
        if rng.gen_bool(0.1) {
            request = request.header(
                "content-encoding",
                *["gzip", "br", "identity", "zz"]
                    .choose(&mut rng)
                    .unwrap_or(&"gzip"),
            );
        }
        let what = format!("#{n} (seed {seed}) {method} {:.120}", path);
        let response = request
            .body(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{what}: the connection failed (a panic?): {e}"));
        let status = response.status().as_u16();
        *by_status.entry(status).or_default() += 1;
        let retry_after = response.headers().contains_key("retry-after");
        let json_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("application/json") || c == "application/problem+json");
        let text = response
            .text()
            .await
            .unwrap_or_else(|e| panic!("{what}: body: {e}"));
        assert!(
            status < 500 || (status == 503 && retry_after),
            "{what}: {status} {text:.300}"
        );
        if status >= 400 && method != "HEAD" {
            let error = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v["detail"].as_str().map(str::to_owned));
            assert!(
                json_type && error.is_some_and(|e| !e.is_empty()),
                "{what}: {status} with a non-JSON error body: {text:.300}"
            );
        }
    }
    println!("fuzz: {requests} requests (seed {seed}), answers by status: {by_status:?}");
    assert!(
        by_status.keys().any(|s| *s < 300),
        "no request was accepted: the generator only reaches error paths"
    );
}
