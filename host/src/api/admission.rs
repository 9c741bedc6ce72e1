//! Admission: how many requests that reach the database are handled at
//! once. Past [`MAX_IN_FLIGHT`], a request is refused on arrival (503,
//! `Retry-After`, problem `overloaded`), before it reads its body or waits
//! for a connection.
//!
//! Why at the door: without it every request waits for one of the request
//! pool's few connections until the pool's acquire timeout, and a runtime
//! that does not bound its requests fills that wait. Measured (a runtime
//! offering 2,000 reports a second with no bound, `BENCHMARKS.md`): each
//! refusal took about a second to come and held a task all that time, and
//! the server took 2 % of what it takes from a runtime that bounds its
//! requests. Refused at once, a request costs microseconds, and those
//! admitted find a connection soon.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use super::error::ApiError;

/// Requests handled at once. The request pool holds 8 connections and a
/// write holds one for a few milliseconds, so 64 keep every connection
/// busy with a queue of a few tens of milliseconds behind them; more would
/// only wait longer.
pub const MAX_IN_FLIGHT: usize = 64;

/// The permits: one per request being handled. Cloned into each route
/// layer, all sharing one count.
#[derive(Clone)]
pub struct Admission {
    permits: Arc<Semaphore>,
}

impl Admission {
    /// At most `max` requests at once.
    pub fn new(max: usize) -> Self {
        Admission {
            permits: Arc::new(Semaphore::new(max)),
        }
    }
}

/// The middleware: handles the request while it holds a permit, refuses
/// it at once when none is free.
pub async fn admit(State(gate): State<Admission>, request: Request, next: Next) -> Response {
    match gate.permits.try_acquire_owned() {
        Ok(_permit) => next.run(request).await,
        Err(_) => ApiError::Overloaded.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::get;
    use axum::{middleware, Router};
    use tokio::sync::{Barrier, Semaphore};
    use tower::ServiceExt;

    use super::{admit, Admission};

    /// Two requests held inside the handler use both permits; a third is
    /// refused without reaching the handler, and once one is done the
    /// next is handled again.
    #[tokio::test]
    async fn refuses_at_once_past_the_limit() {
        let entered = Arc::new(Barrier::new(3));
        let release = Arc::new(Semaphore::new(0));
        let handler = {
            let (entered, release) = (entered.clone(), release.clone());
            move || {
                let (entered, release) = (entered.clone(), release.clone());
                async move {
                    entered.wait().await;
                    let _go = release.acquire().await;
                    "done"
                }
            }
        };
        let app = Router::new()
            .route("/held", get(handler))
            .route("/quick", get(|| async { "quick" }))
            .route_layer(middleware::from_fn_with_state(Admission::new(2), admit));
        let get = |path: &str| {
            app.clone()
                .oneshot(Request::get(path).body(Body::empty()).expect("request"))
        };
        let held: Vec<_> = (0..2).map(|_| tokio::spawn(get("/held"))).collect();
        entered.wait().await;
        let refused = get("/quick").await.expect("answer");
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            refused.headers().get("retry-after").map(|v| v.as_bytes()),
            Some(&b"1"[..])
        );
        release.add_permits(2);
        for h in held {
            assert_eq!(
                h.await.expect("task").expect("answer").status(),
                StatusCode::OK
            );
        }
        assert_eq!(
            get("/quick").await.expect("answer").status(),
            StatusCode::OK
        );
    }
}
