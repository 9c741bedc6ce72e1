//! `docs/openapi.json` against the real router: every documented path and
//! method is served (not the fallback's 404 or 405), every other common
//! method on a documented path is a 405, unknown paths are the fallback's
//! 404, and every `$ref` in the document resolves. Together that makes the
//! document's paths and methods equal the router's routes.

use std::collections::BTreeSet;

use nomos_continue_tests::api::ServedApi;
use serde_json::Value;
use uuid::Uuid;

const METHODS: [&str; 5] = ["get", "post", "put", "delete", "patch"];

fn document() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is not JSON: {e}"))
}

/// The documented (path template, method) pairs.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let paths = doc["paths"].as_object().expect("paths");
    let mut out = BTreeSet::new();
    for (path, item) in paths {
        for method in item.as_object().expect("path item").keys() {
            assert!(
                METHODS.contains(&method.as_str()),
                "unexpected key {method} under {path}"
            );
            out.insert((path.clone(), method.clone()));
        }
    }
    out
}

/// A concrete path: every `{parameter}` becomes a fresh UUID.
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|segment| {
            if segment.starts_with('{') && segment.ends_with('}') {
                Uuid::new_v4().to_string()
            } else {
                segment.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether the answer came from the router's fallbacks (no such route, or
/// no such method on it). A handler's own 404 (an unknown session) has a
/// different message.
fn from_fallback(status: u16, body: &str) -> bool {
    let error = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|b| b["detail"].as_str().map(str::to_owned));
    status == 405 || (status == 404 && error.as_deref() == Some("no such route"))
}

#[tokio::test]
async fn the_document_lists_exactly_the_routes_the_router_serves() {
    let doc = document();
    let ops = operations(&doc);
    assert!(ops.len() >= 9, "{ops:?}");
    let (store, _dir) = nomos_continue_tests::db::fresh_sqlite().await;
    let api = ServedApi::start(store, Some("doc-token")).await;

    let templates: BTreeSet<&String> = ops.iter().map(|(p, _)| p).collect();
    for template in templates {
        for method in METHODS {
            let path = concrete(template);
            let answer = api.send(&method.to_uppercase(), &path, "{}").await;
            let documented = ops.contains(&(template.clone(), method.to_string()));
            if documented {
                assert!(
                    !from_fallback(answer.status, &answer.text),
                    "documented {method} {template} is not served: {} {}",
                    answer.status,
                    answer.text
                );
            } else {
                assert_eq!(
                    answer.status, 405,
                    "undocumented {method} {template} is served: {}",
                    answer.text
                );
                answer.expect_error(405);
            }
        }
    }
    for path in [
        "/v1/session",
        "/v1/executions",
        "/v1/policy/x",
        "/v1/sessions/x/unknown",
        "/health",
        "/v2/policy",
    ] {
        let answer = api.send("GET", path, "").await;
        assert!(
            from_fallback(answer.status, &answer.text),
            "{path}: {} {}",
            answer.status,
            answer.text
        );
        answer.expect_error(404);
    }
}

/// The routes as `host/src/api/mod.rs` declares them (`.route("PATH",
/// get(..).put(..))`), read from the source because axum cannot list a
/// router's routes: so a route added there without a line in the document
/// fails here, and the served probe above proves the document is real.
fn declared_routes() -> BTreeSet<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../host/src/api/mod.rs");
    let source = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let mut out = BTreeSet::new();
    for call in source.split(".route(").skip(1) {
        let call = call.split(';').next().unwrap_or_default();
        let Some(rest) = call.trim_start().strip_prefix('"') else {
            continue;
        };
        let (route, handlers) = rest.split_once('"').expect("closing quote");
        for method in METHODS {
            let call = format!("{method}(");
            let found = handlers
                .match_indices(&call)
                .any(|(i, _)| !handlers[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'));
            if found {
                out.insert((route.to_string(), method.to_string()));
            }
        }
    }
    out
}

#[test]
fn the_document_matches_the_declared_routes() {
    let declared = declared_routes();
    assert!(
        declared.contains(&("/healthz".to_string(), "get".to_string())),
        "{declared:?}"
    );
    assert_eq!(operations(&document()), declared);
}

/// Every `$ref` points at something the document defines, and every
/// operation documents its success and its errors.
#[test]
fn the_document_is_self_consistent() {
    let doc = document();
    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        let pointer = r
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("external $ref {r}"));
        assert!(doc.pointer(pointer).is_some(), "dangling $ref {r}");
    }
    for (path, method) in operations(&doc) {
        let op = &doc["paths"][&path][&method];
        let responses = op["responses"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path}: no responses"));
        assert!(responses.contains_key("200"), "{method} {path}: no 200");
        assert!(
            !path.starts_with("/v1/") || responses.keys().any(|k| k.starts_with('4')),
            "{method} {path}: no 4xx"
        );
        assert!(
            op["operationId"].is_string(),
            "{method} {path}: no operationId"
        );
    }
}

/// The committed document is the one this build generates: a change of a
/// wire type or a route's annotation must come with its document
/// (`cargo run -- openapi > docs/openapi.json`, or `BLESS=1` on this
/// test, which rewrites the file), so a shape never drifts unseen.
#[test]
fn the_committed_document_is_the_generated_one() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
    let generated = nomos_continue::api::openapi_text();
    if std::env::var_os("BLESS").is_some_and(|v| v != "0") {
        std::fs::write(path, &generated).unwrap_or_else(|e| panic!("write {path}: {e}"));
    }
    let committed = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    if committed != generated {
        let diff = similar::TextDiff::from_lines(&committed, &generated);
        let shown: String = diff
            .unified_diff()
            .context_radius(2)
            .header("docs/openapi.json", "generated")
            .to_string()
            .chars()
            .take(4000)
            .collect();
        panic!(
            "docs/openapi.json is not what this build generates; \
             run `cargo run -- openapi > docs/openapi.json`:\n{shown}"
        );
    }
}

/// Every property of every schema says what it means (a field with no
/// description reads as whatever its name suggests: `attempts: 0` on a
/// delivered row read as "never sent").
#[test]
fn every_schema_property_is_described() {
    let doc = document();
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    let mut missing = Vec::new();
    for (name, schema) in schemas {
        let Some(properties) = schema["properties"].as_object() else {
            continue;
        };
        for (field, property) in properties {
            // A nullable reference carries its description on the
            // reference, inside `oneOf`.
            let described = std::iter::once(property)
                .chain(property["oneOf"].as_array().into_iter().flatten())
                .any(|p| {
                    p["description"]
                        .as_str()
                        .is_some_and(|d| !d.trim().is_empty())
                });
            if !described {
                missing.push(format!("{name}.{field}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "properties without a description: {missing:?}"
    );
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}
