//! The OpenAPI 3.1 document, generated from the handlers' annotations and
//! the wire types, so it cannot drift from them: `GET /openapi.json` serves
//! it, `nomos-continue openapi` prints it, and a test fails when the
//! committed `docs/openapi.json` differs.
//!
//! What the annotations would repeat on every route is added here once:
//! the bearer scheme, and the error responses each route can give (a
//! problem document; 503 with `Retry-After`).

use std::sync::OnceLock;

use serde_json::{json, Value};
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, HeaderBuilder, Ref, ResponseBuilder};
use utoipa::{Modify, OpenApi, PartialSchema};

use super::error::PROBLEM_JSON;
use super::request::REQUEST_ID_HEADER;
use super::wire;
use crate::agent::{ContinuationEvent, NoticeEvent, OperatorNoticeEvent};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "nomos-continue",
        description = "Links a runtime's asynchronous tool executions to the chat sessions that \
            started them, and re-invokes the agent with their results while the operator's \
            assent window is open. Errors are RFC 9457 problem documents; docs/api.md says \
            what each route does and docs/webhooks.md what the agent receives.",
        license(name = "Apache-2.0", identifier = "Apache-2.0")
    ),
    paths(
        super::overview::overview,
        super::sessions::sessions,
        super::sessions::session,
        super::sessions::links,
        super::sessions::deliveries,
        super::sessions::notices,
        super::sessions::writes::link_tool_result,
        super::sessions::writes::decide_approval,
        super::sessions::writes::record_turn,
        super::executions::record_execution,
        super::executions::execution,
        super::tasks::register_task,
        super::tasks::mint_session_push,
        super::a2a::receive_push,
        super::a2a::receive_session_push,
        super::mcp::record_mcp_task,
        super::deliveries::delivery,
        super::deliveries::retry,
        super::deliveries::drop_delivery,
        super::policy::policy_info,
        super::policy::upload_policy,
        super::policy::rollback_policy,
        super::policy::promote_shadow,
        super::policy::drop_shadow,
        super::service::metrics,
        super::service::healthz,
        super::service::readyz,
        super::service::openapi,
    ),
    components(schemas(wire::Problem, ContinuationEvent, NoticeEvent, OperatorNoticeEvent)),
    modifiers(&Shared),
    security(("bearer" = [])),
    tags(
        (name = "overview", description = "What is in flight, failing or unheard, over every session"),
        (name = "sessions", description = "Tool results, approvals, chat turns and what a session holds"),
        (name = "executions", description = "What a runtime reports of an execution"),
        (name = "tasks", description = "Protocol tasks: MCP Tasks updates, A2A push configurations and pushes"),
        (name = "deliveries", description = "What was sent to the agent"),
        (name = "policy", description = "The continuation policy: read by the runtime token, changed by the admin token"),
        (name = "service", description = "Liveness, readiness and metrics"),
    )
)]
struct ApiDoc;

/// The bearer scheme and the shared error responses.
struct Shared;

impl Modify for Shared {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "`serve --read-token` opens the GET routes and `/metrics`; `serve \
                         --token` the runtime routes and the reads; `serve --admin-token` \
                         opens every route, and is the only one that changes the policy. \
                         Without any token the routes are open (loopback only).",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "push_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The push token `POST /v1/sessions/{id}/tasks` minted for one task, \
                         or `POST /v1/sessions/{id}/push-configs` for a session's tasks (also \
                         accepted in `X-A2A-Notification-Token`): it reports that task (or \
                         the session's tasks) and opens nothing else.",
                    ))
                    .build(),
            ),
        );
        for (path, item) in doc.paths.paths.iter_mut() {
            let open = !path.starts_with("/v1/") && path != "/metrics";
            if let Some(operation) = item.get.as_mut() {
                add_errors(path, operation, open, true);
            }
            for operation in [item.put.as_mut(), item.post.as_mut(), item.delete.as_mut()]
                .into_iter()
                .flatten()
            {
                add_errors(path, operation, open, false);
            }
        }
    }
}

/// The errors a route can answer, beside those its annotation names.
fn add_errors(path: &str, operation: &mut Operation, open: bool, reads: bool) {
    let has_params = operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
    let has_body = operation.request_body.is_some();
    let mut errors: Vec<(&str, &str)> = Vec::new();
    if has_params || has_body {
        errors.push(("400", "The request is malformed"));
    }
    if !open {
        errors.push(("401", "A token is configured and the request lacks one"));
        errors.push(("403", "The token's scope does not open this route"));
    }
    // A write to an unknown session or execution creates it; only reads
    // and the delivery routes name what must exist.
    if path.contains('{') && (reads || path.starts_with("/v1/deliveries/")) {
        errors.push(("404", "Nothing is known of the id in the path"));
    }
    if has_body {
        errors.push((
            "413",
            "The body or a text in it is over its limit (named in `limit`)",
        ));
    }
    if !open {
        errors.push(("500", "The server failed; its log names the request_id"));
        errors.push((
            "503",
            "The database or the policy is unavailable for a moment; retry after Retry-After",
        ));
    }
    for (status, description) in errors {
        operation
            .responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| problem_response(status, description).into());
    }
}

fn problem_response(status: &str, description: &str) -> utoipa::openapi::Response {
    let mut response = ResponseBuilder::new().description(description).content(
        PROBLEM_JSON,
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("Problem")))
            .build(),
    );
    response = response.header(
        REQUEST_ID_HEADER,
        HeaderBuilder::new()
            .schema(<String as PartialSchema>::schema())
            .description(Some("Names the request in the server's log"))
            .build(),
    );
    if status == "503" {
        response = response.header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(<u32 as PartialSchema>::schema())
                .description(Some("Seconds to wait before retrying"))
                .build(),
        );
    }
    response.build()
}

/// The document, built once per process.
pub fn document() -> Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT
        .get_or_init(|| {
            let mut doc = match serde_json::to_value(ApiDoc::openapi()) {
                Ok(doc) => doc,
                Err(e) => {
                    json!({ "error": format!("the OpenAPI document did not serialize: {e}") })
                }
            };
            binary_upload(&mut doc);
            doc["webhooks"] = webhooks();
            doc
        })
        .clone()
}

/// `PUT /v1/policy`'s body is the component's bytes: a binary string, as
/// generators (openapi-python-client) read an `application/octet-stream`
/// body to send a file.
fn binary_upload(doc: &mut Value) {
    let content = &mut doc["paths"]["/v1/policy"]["put"]["requestBody"]["content"];
    if let Some(media) = content.get_mut("application/octet-stream") {
        media["schema"] = json!({ "type": "string", "format": "binary" });
    }
}

/// OpenAPI 3.1 `webhooks`: what the engine POSTs to the runtime's
/// `--agent-webhook` and the operator's `--notify-webhook`
/// (docs/webhooks.md is the integrator's page). The
/// bodies are the `agent::payload` types the webhook adapter sends.
fn webhooks() -> Value {
    let header = |name: &str, description: &str, required: bool| {
        json!({ "name": name, "in": "header", "required": required,
                "description": description, "schema": { "type": "string" } })
    };
    let parameters = json!([
        header(
            "webhook-id",
            "The delivery's idempotency key: the same on every attempt",
            true
        ),
        header(
            "webhook-timestamp",
            "Unix seconds when this attempt was sent",
            true
        ),
        header(
            "webhook-signature",
            "`v1,<base64 HMAC-SHA256 of id.timestamp.body>`, one per configured secret, \
             space-separated; absent when no secret is configured",
            false,
        ),
        header("Idempotency-Key", "The same key as `webhook-id`", true),
    ]);
    let responses = json!({
        "2XX": { "description": "Accepted: the key is done and never sent again" },
        "409": { "description": "Still handling an earlier request with this key: sent \
            again later with the same key, not counted as an attempt" },
        "429": { "description": "Come back later: sent again after `Retry-After`, not \
            counted as an attempt (408 is treated the same)" },
        "4XX": { "description": "Refused for good (every 4xx but 408, 409 and 429): the \
            delivery fails, and a continuation's failure is told in one notice" },
        "5XX": { "description": "Sent again later with the same key: 502, 503 and 504 \
            after `Retry-After` and not counted as attempts; every other 5xx counted" },
    });
    let operator_responses = json!({
        "2XX": { "description": "Accepted: this notice is not sent to this channel again" },
        "4XX": { "description": "Refused for good (every 4xx but 408, 409 and 429): the \
            copy ends `failed`; if the agent's copy failed too, the notice is counted as \
            reaching no one" },
        "5XX": { "description": "Sent again later with the same `webhook-id`, within the \
            channel's own budget of attempts (408, 409 and 429 too)" },
    });
    let hook = |summary: &str, schema: &str, responses: &Value| {
        json!({ "post": {
            "summary": summary,
            "operationId": format!("receive_{}", schema.to_lowercase()),
            "parameters": parameters,
            "requestBody": { "required": true, "content": { "application/json": {
                "schema": { "$ref": format!("#/components/schemas/{schema}") } } } },
            "responses": responses,
        } })
    };
    json!({
        "continuation": hook(
            "Re-invoke the session's agent with its finished executions (`continuation.v1`)",
            "ContinuationEvent",
            &responses,
        ),
        "notice": hook(
            "Show the session's operator a notice; do not run the agent (`notice.v1`)",
            "NoticeEvent",
            &responses,
        ),
        "operator_notice": hook(
            "Tell a person about a notice, apart from the agent: `--notify-webhook` with \
             `--notify-format json` (`operator_notice.v1`)",
            "OperatorNoticeEvent",
            &operator_responses,
        ),
    })
}

/// The document as the committed file holds it: pretty, with a final newline.
pub fn document_text() -> String {
    let mut text = serde_json::to_string_pretty(&document()).unwrap_or_default();
    text.push('\n');
    text
}
