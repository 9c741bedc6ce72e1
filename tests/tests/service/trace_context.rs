//! One trace across the async gap, through the real binary: the runtime's
//! `traceparent` on a tool result (or a status report) comes back on the
//! continuation's webhook call as a child of the host's `deliver` span, and
//! with `--otlp-endpoint` the `link`, `decide` and `deliver` spans reach a
//! loopback OTLP/HTTP receiver, decoded here with the published protobuf
//! messages.

use std::collections::HashMap;
use std::path::Path;

use nomos_continue_tests::http::{RecordedRequest, RecordingServer, Reply, Script};
use nomos_continue_tests::replica::{Replica, ReplicaOptions};
use nomos_continue_tests::wait::PATIENCE;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use prost::Message;
use serde_json::{json, Value};
use uuid::Uuid;

const TOOL_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const TOOL_SPAN: &str = "00f067aa0ba902b7";
const REPORT_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const REPORT_SPAN: &str = "b7ad6b7169203331";

fn traceparent(trace: &str, span: &str) -> String {
    format!("00-{trace}-{span}-01")
}

/// A loopback receiver that accepts whatever is posted with a 200: the
/// runtime's webhook, or an OTLP/HTTP collector.
async fn receiver() -> RecordingServer {
    let (_, server) = RecordingServer::start(Script::always(Reply::status(200)))
        .await
        .unwrap_or_else(|e| panic!("bind loopback: {e}"));
    server
}

fn sqlite_url(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("nomos.db").display())
}

/// The trace id and span id of a `traceparent`, checked to be a valid
/// version-00 header.
fn ids_of(header: &str) -> (String, String) {
    let fields: Vec<&str> = header.split('-').collect();
    let hex = |s: &str| s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    assert!(
        fields.len() == 4
            && fields[0] == "00"
            && fields[1].len() == 32
            && fields[2].len() == 16
            && fields[3].len() == 2
            && fields.iter().all(|f| hex(f))
            && fields[1].bytes().any(|b| b != b'0')
            && fields[2].bytes().any(|b| b != b'0'),
        "not a valid traceparent: {header}"
    );
    (fields[1].to_string(), fields[2].to_string())
}

/// A runtime's write with trace headers; asserts it succeeded.
async fn send(request: reqwest::RequestBuilder, headers: &[(&str, &str)], body: Value) -> Value {
    let request = (headers.iter()).fold(request, |r, (name, value)| r.header(*name, *value));
    let response = request
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("send: {e}"));
    let status = response.status();
    let answer: Value = response.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "{status}: {answer}");
    answer
}

/// `POST /v1/sessions/{id}/tool-results` naming `execution`, with `headers`.
async fn tool_result(replica: &Replica, session: Uuid, execution: Uuid, headers: &[(&str, &str)]) {
    let url = format!("http://{}/v1/sessions/{session}/tool-results", replica.addr);
    let body = json!({"text": format!("running, execution {execution}")});
    let answer = send(reqwest::Client::new().post(url), headers, body).await;
    assert_eq!(answer["linked"], json!([execution]), "{answer}");
}

/// `PUT /v1/executions/{id}` reporting `failed`, with `headers`.
async fn failed(replica: &Replica, execution: Uuid, headers: &[(&str, &str)]) {
    let url = format!("http://{}/v1/executions/{execution}", replica.addr);
    let body = json!({"status": "failed", "result": "ssh: connection refused"});
    send(reqwest::Client::new().put(url), headers, body).await;
}

/// The webhook calls once `n` have arrived, bounded.
async fn calls(webhook: &RecordingServer, n: usize) -> Vec<RecordedRequest> {
    tokio::time::timeout(PATIENCE, webhook.wait_for_requests(n))
        .await
        .unwrap_or_else(|_| panic!("{n} webhook calls did not arrive"))
}

/// One exported span, its ids in hex.
#[derive(Debug)]
struct Exported {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent_id: String,
    attributes: HashMap<String, String>,
}

fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    let kv = attributes.iter().find(|kv| kv.key == key)?;
    Some(match kv.value.as_ref()?.value.as_ref()? {
        AnyValue::StringValue(s) => s.clone(),
        AnyValue::IntValue(i) => i.to_string(),
        AnyValue::ArrayValue(list) => (list.values.iter())
            .filter_map(|v| match &v.value {
                Some(AnyValue::StringValue(s)) => Some(s.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(","),
        other => format!("{other:?}"),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every span the collector was sent, decoded from OTLP protobuf.
fn exported(requests: &[RecordedRequest]) -> Vec<Exported> {
    let mut out = Vec::new();
    for request in requests {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/v1/traces")
        );
        assert_eq!(
            request.header("content-type"),
            Some("application/x-protobuf")
        );
        let decoded = ExportTraceServiceRequest::decode(request.body.as_slice())
            .unwrap_or_else(|e| panic!("not an OTLP trace export: {e}"));
        for resource_spans in decoded.resource_spans {
            let service = (resource_spans.resource.as_ref())
                .and_then(|r| text(&r.attributes, "service.name"))
                .unwrap_or_default();
            for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
                let keys = [
                    "nomos.session_id",
                    "nomos.execution_id",
                    "nomos.execution_ids",
                ];
                let extra = ["nomos.delivery_id", "nomos.outcome"];
                let attributes = (keys.iter().chain(&extra))
                    .filter_map(|k| Some((k.to_string(), text(&span.attributes, k)?)))
                    .collect();
                out.push(Exported {
                    service: service.clone(),
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_id: hex(&span.parent_span_id),
                    attributes,
                });
            }
        }
    }
    out
}

/// The tool result's trace wins over the report's; the webhook call is a
/// child of `deliver`, a child of `link`, a child of the runtime's tool
/// span; `decide` hangs under `link` too; all are exported over OTLP/HTTP,
/// the last of them by the graceful shutdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_continuation_joins_the_tool_results_trace_and_its_spans_are_exported() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let (webhook, collector) = (receiver().await, receiver().await);
    let mut options = ReplicaOptions::new(&sqlite_url(dir.path()), &webhook.url("/hook"), "t1");
    options.extra_args = vec!["--otlp-endpoint".into(), collector.url("")];
    let mut replica = Replica::start(&options).await;
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());

    replica.approve(session).await;
    let tool = traceparent(TOOL_TRACE, TOOL_SPAN);
    let headers = [
        ("traceparent", tool.as_str()),
        ("tracestate", "vendor=tool"),
    ];
    tool_result(&replica, session, execution, &headers).await;
    let report = traceparent(REPORT_TRACE, REPORT_SPAN);
    failed(&replica, execution, &[("traceparent", report.as_str())]).await;

    let call = calls(&webhook, 1).await.remove(0);
    let sent = call
        .header("traceparent")
        .expect("the call carries a traceparent");
    let (trace_id, deliver_id) = ids_of(sent);
    assert_eq!(
        trace_id, TOOL_TRACE,
        "the tool result's trace, not the report's"
    );
    assert_ne!(deliver_id, TOOL_SPAN, "a child span, not the runtime's own");
    assert_eq!(call.header("tracestate"), Some("vendor=tool"));

    let status = replica.terminate().await;
    assert!(
        status.success(),
        "serve exited {status}: {}",
        replica.stderr()
    );
    let spans = exported(&collector.requests());
    assert!(
        spans.iter().all(|s| s.service == "nomos-continue"),
        "{spans:?}"
    );
    assert!(
        spans.iter().all(|s| s.trace_id != REPORT_TRACE),
        "{spans:?}"
    );
    let find = |name: &str| {
        (spans.iter())
            .find(|s| s.name == name && s.trace_id == TOOL_TRACE)
            .unwrap_or_else(|| panic!("no {name} span in the tool's trace: {spans:?}"))
    };
    let (link, decide, deliver) = (find("link"), find("decide"), find("deliver"));
    assert_eq!(link.parent_id, TOOL_SPAN);
    assert_eq!(decide.parent_id, link.span_id);
    assert_eq!(deliver.parent_id, link.span_id);
    assert_eq!(
        deliver.span_id, deliver_id,
        "the header names the deliver span"
    );
    let attribute = |span: &Exported, key: &str| span.attributes.get(key).cloned();
    let session_text = Some(session.to_string());
    let execution_text = Some(execution.to_string());
    for span in [link, decide, deliver] {
        assert_eq!(
            attribute(span, "nomos.session_id"),
            session_text,
            "{span:?}"
        );
    }
    assert_eq!(attribute(link, "nomos.execution_ids"), execution_text);
    assert_eq!(attribute(decide, "nomos.execution_id"), execution_text);
    assert_eq!(
        attribute(decide, "nomos.outcome").as_deref(),
        Some("continue")
    );
    assert_eq!(attribute(deliver, "nomos.execution_ids"), execution_text);
    assert_eq!(
        attribute(deliver, "nomos.outcome").as_deref(),
        Some("accepted")
    );
    let delivery = attribute(deliver, "nomos.delivery_id").unwrap_or_default();
    assert!(delivery.parse::<Uuid>().is_ok(), "delivery id {delivery:?}");
}

/// Without a tool result's trace the report's is carried; invalid headers
/// are ignored and the writes succeed; without `--otlp-endpoint` nothing is
/// exported (not even to the SDK's own environment variable) while the
/// calls still carry a trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reports_trace_is_carried_and_nothing_is_exported_without_an_endpoint() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let (webhook, collector) = (receiver().await, receiver().await);
    let mut options = ReplicaOptions::new(&sqlite_url(dir.path()), &webhook.url("/hook"), "t2");
    // What an exporter built from the SDK's defaults would send to.
    let traces = collector.url("/v1/traces");
    options.env = vec![("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".into(), traces)];
    let mut replica = Replica::start(&options).await;
    let (reported, invalid) = (Uuid::new_v4(), Uuid::new_v4());
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());

    replica.approve(reported).await;
    replica.approve(invalid).await;
    tool_result(&replica, reported, a, &[]).await;
    let report = traceparent(REPORT_TRACE, REPORT_SPAN);
    failed(&replica, a, &[("traceparent", report.as_str())]).await;
    let zeros = traceparent(&"0".repeat(32), TOOL_SPAN);
    let bad = [("traceparent", zeros.as_str()), ("tracestate", "x=y")];
    tool_result(&replica, invalid, b, &bad).await;
    failed(&replica, b, &[("traceparent", "00-not-a-trace-01")]).await;

    let by_session: HashMap<String, RecordedRequest> = (calls(&webhook, 2).await.into_iter())
        .map(|r| {
            let session = r.json().expect("a JSON body")["data"]["session_id"].clone();
            (session.as_str().unwrap_or_default().to_string(), r)
        })
        .collect();
    let header = |session: Uuid, name: &str| {
        let call = (by_session.get(&session.to_string()))
            .unwrap_or_else(|| panic!("no call for {session}: {by_session:?}"));
        call.header(name).map(str::to_string)
    };
    let carried = header(reported, "traceparent").expect("a traceparent");
    let (trace_id, span_id) = ids_of(&carried);
    assert_eq!(trace_id, REPORT_TRACE);
    assert_ne!(span_id, REPORT_SPAN);
    let fresh = header(invalid, "traceparent").expect("a traceparent");
    let (trace_id, _) = ids_of(&fresh);
    assert_ne!(trace_id, REPORT_TRACE);
    assert_eq!(
        header(invalid, "tracestate"),
        None,
        "the bad request's state is dropped"
    );

    let status = replica.terminate().await;
    assert!(
        status.success(),
        "serve exited {status}: {}",
        replica.stderr()
    );
    assert!(
        collector.requests().is_empty(),
        "exported without an endpoint"
    );
}
