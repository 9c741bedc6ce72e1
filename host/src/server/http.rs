//! The API as served: its router (the API's and the console's routes,
//! every request counted by its route, and the access log when asked for)
//! on the listener, capped in connections, with TLS when configured.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::{middleware, Router};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::rustls::ServerConfig as TlsConfig;
use tokio_util::sync::CancellationToken;

use super::connections::CappedListener;
use super::{ServeConfig, TlsListener};
use crate::api::{self, AppState};
use crate::console;
use crate::metrics::Metrics;

/// How long a request waits for a database connection before its 503: an
/// outage (the database unreachable, its connections exhausted) answers
/// within the API's bound of 1 s, not after a pool's 30 s.
pub(super) const REQUEST_ACQUIRE: std::time::Duration = std::time::Duration::from_millis(500);

/// The base URL minted push URLs start with: the configured one, or this
/// listener's address (none without a listener); no trailing slash.
pub(super) fn public_url(config: &ServeConfig, addr: Option<SocketAddr>, tls: bool) -> String {
    let url = match (&config.public_url, addr) {
        (Some(url), _) => url.clone(),
        (None, Some(addr)) => format!("{}://{addr}", if tls { "https" } else { "http" }),
        (None, None) => String::new(),
    };
    url.trim_end_matches('/').to_owned()
}

/// The API's and the console's routes under the same tokens, every
/// request counted by its route; with `access_log`, one line per request.
pub(super) fn app(state: AppState, access_log: bool) -> Router {
    let measured = middleware::from_fn_with_state(state.metrics.clone(), api::measure);
    let app = api::router(state.clone())
        .merge(console::router(state))
        .layer(measured);
    if access_log {
        app.layer(api::access_log())
    } else {
        app
    }
}

/// Serves `app` on `listener` (TLS when `tls` is set), at most `cap`
/// connections open at once, until `shutdown`.
pub(super) async fn spawn(
    listener: TcpListener,
    tls: Option<Arc<TlsConfig>>,
    cap: usize,
    metrics: Arc<Metrics>,
    app: Router,
    shutdown: CancellationToken,
) -> Result<JoinHandle<std::io::Result<()>>> {
    Ok(match tls {
        Some(tls) => {
            let listener = TlsListener::new(listener, tls).context("serve TLS")?;
            let listener = CappedListener::new(listener, cap, metrics).await?;
            tokio::spawn(serve_http(listener, app, shutdown))
        }
        None => {
            let listener = CappedListener::new(listener, cap, metrics).await?;
            tokio::spawn(serve_http(listener, app, shutdown))
        }
    })
}

/// Serves `app` on `listener` until `shutdown`, letting requests in flight
/// finish: the API's and any HTTP endpoint a caller stands up beside it.
pub async fn serve_http<L>(
    listener: L,
    app: Router,
    shutdown: CancellationToken,
) -> std::io::Result<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}
