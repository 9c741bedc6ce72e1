//! The process's tracer provider, and its export over OTLP/HTTP when an
//! endpoint is configured.
//!
//! Why a provider always exists: the `deliver` span's context is the
//! `traceparent` a continuation carries, so spans need real ids even when
//! nothing is exported; an SDK provider without exporters gives them that
//! and drops each span when it ends.
//!
//! Why our own HTTP client: `opentelemetry-otlp` 0.33's reqwest features
//! bring reqwest 0.13 beside the workspace's 0.12 (and, for TLS, another
//! crypto provider). The exporter takes any `HttpClient`, so it is given
//! the workspace's reqwest (rustls on ring). The SDK's batch processor
//! exports from a thread of its own, outside tokio, so each request is
//! spawned on the runtime that started the process.

use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

/// The `service.name` every exported span carries.
pub const SERVICE_NAME: &str = "nomos-continue";

/// How long one export request may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most bytes of a collector's answer read (it is a small message).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// How long shutdown waits for the last spans to be exported.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Why telemetry could not be set up as configured.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The endpoint is not an `http` or `https` URL.
    #[error("invalid OTLP endpoint {endpoint:?}: {reason}")]
    Endpoint {
        /// The endpoint by its origin (see `redact`).
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The exporter could not be built.
    #[error("cannot build the OTLP exporter: {0}")]
    Exporter(String),
    /// Spans were made before export was set up, so the provider that made
    /// them (which exports nothing) is this process's for good.
    #[error("telemetry was already set up in this process; spans would not be exported")]
    AlreadySet,
}

/// This process's telemetry, once set up; [`Telemetry::shutdown`] exports
/// what is left.
#[derive(Debug)]
pub struct Telemetry {
    exporting: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Sets up the process's tracer provider. With `endpoint` (a collector's
    /// base URL, to which `/v1/traces` is added unless it already ends so),
    /// spans are exported in batches over OTLP/HTTP protobuf; without one
    /// the provider exports nothing. Must run inside a tokio runtime, before
    /// any span is made.
    pub fn install(endpoint: Option<&str>) -> Result<Self, TelemetryError> {
        let Some(endpoint) = endpoint.map(str::trim).filter(|e| !e.is_empty()) else {
            return Ok(Self { exporting: None });
        };
        let url = traces_url(endpoint)?;
        let client = OnRuntime::new()?;
        let exporter = SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(url)
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let provider = SdkTracerProvider::builder()
            .with_resource(resource())
            .with_batch_exporter(exporter)
            .build();
        PROVIDER
            .set(provider.clone())
            .map_err(|_| TelemetryError::AlreadySet)?;
        Ok(Self {
            exporting: Some(provider),
        })
    }

    /// Exports the spans not yet sent and stops the exporter (bounded by
    /// [`FLUSH_TIMEOUT`]). Off the runtime's threads: the export it waits
    /// for runs on them.
    pub async fn shutdown(self) {
        let Some(provider) = self.exporting else {
            return;
        };
        let flushed =
            tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(FLUSH_TIMEOUT))
                .await;
        match flushed {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("the last spans were not all exported: {e}"),
            Err(e) => tracing::warn!("the span exporter's shutdown failed: {e}"),
        }
    }
}

/// The resource every exported span names: the SDK's (which reads
/// `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`), with this crate's
/// name as the service's unless the environment names it, and its version.
fn resource() -> Resource {
    let named = named_by_environment(
        std::env::var("OTEL_SERVICE_NAME").ok().as_deref(),
        std::env::var("OTEL_RESOURCE_ATTRIBUTES").ok().as_deref(),
    );
    let builder = Resource::builder()
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if named {
        builder.build()
    } else {
        builder.with_service_name(SERVICE_NAME).build()
    }
}

/// Whether the OpenTelemetry variables name the service: a non-empty
/// `OTEL_SERVICE_NAME`, or `service.name` among the resource attributes.
fn named_by_environment(service_name: Option<&str>, attributes: Option<&str>) -> bool {
    let by_name = service_name.is_some_and(|name| !name.trim().is_empty());
    let by_attribute = attributes.is_some_and(|list| {
        list.split(',')
            .filter_map(|pair| pair.split_once('='))
            .any(|(key, value)| key.trim() == "service.name" && !value.trim().is_empty())
    });
    by_name || by_attribute
}

/// The tracer every span of this crate comes from.
pub(super) fn tracer() -> &'static SdkTracer {
    TRACER.get_or_init(|| {
        let provider = PROVIDER.get_or_init(|| SdkTracerProvider::builder().build());
        let scope = InstrumentationScope::builder(SERVICE_NAME)
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        provider.tracer_with_scope(scope)
    })
}

/// The traces endpoint of a collector's base URL.
fn traces_url(endpoint: &str) -> Result<String, TelemetryError> {
    let invalid = |reason: String| TelemetryError::Endpoint {
        endpoint: crate::redact::endpoint(endpoint),
        reason,
    };
    let url = reqwest::Url::parse(endpoint).map_err(|e| invalid(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!("unsupported scheme {:?}", url.scheme())));
    }
    let base = endpoint.trim_end_matches('/');
    Ok(if base.ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{base}/v1/traces")
    })
}

/// The exporter's HTTP client: the workspace's reqwest, each request run on
/// the runtime that set telemetry up.
#[derive(Debug)]
struct OnRuntime {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl OnRuntime {
    fn new() -> Result<Self, TelemetryError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| TelemetryError::Exporter(format!("no async runtime: {e}")))?;
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        Ok(Self { client, runtime })
    }
}

#[async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let answered = self.runtime.spawn(async move {
            let mut response = client.execute(request).await?;
            let status = response.status();
            let headers = std::mem::take(response.headers_mut());
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, reqwest::Error>((status, headers, body))
        });
        let (status, headers, body) = answered.await??;
        let mut response = Response::builder().status(status).body(Bytes::from(body))?;
        *response.headers_mut() = headers;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_names_the_service_when_it_says_so() {
        assert!(!named_by_environment(None, None));
        assert!(!named_by_environment(
            Some("  "),
            Some("deployment.environment=prod")
        ));
        assert!(named_by_environment(Some("runtime-a"), None));
        assert!(named_by_environment(
            None,
            Some("team=x, service.name=runtime-a")
        ));
        assert!(!named_by_environment(None, Some("service.name=")));
    }

    #[test]
    fn an_invalid_endpoint_is_named_by_its_origin() {
        let err = traces_url("ftp://u:s3cret@collector.example/k").expect_err("refused");
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }

    #[test]
    fn the_traces_path_is_added_once() {
        let url = |e: &str| traces_url(e).expect("valid");
        assert_eq!(url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(url("https://c/otlp/v1/traces"), "https://c/otlp/v1/traces");
        assert!(traces_url("ftp://c").is_err());
        assert!(traces_url("not a url").is_err());
    }
}
