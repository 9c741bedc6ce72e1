//! The demo runtime's HTTP client for nomos-continue's API: the same calls
//! a runtime beside nomos-continue makes.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use uuid::Uuid;

/// Calls the API of one `serve`-like host.
#[derive(Clone)]
pub struct ApiClient {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl ApiClient {
    pub fn new(base: String, token: String) -> Self {
        Self {
            http: reqwest::Client::new(),
            base,
            token,
        }
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Value) -> Result<Value> {
        let response = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .with_context(|| format!("call {path}"))?;
        let status = response.status();
        let value: Value = response
            .json()
            .await
            .with_context(|| format!("read the answer of {path}"))?;
        if !status.is_success() {
            bail!("{path}: {status}: {value}");
        }
        Ok(value)
    }

    /// The operator's approval of the plan.
    pub async fn approve(&self, session: Uuid, route: &str) -> Result<Value> {
        self.send(
            reqwest::Method::POST,
            &format!("/v1/sessions/{session}/approvals"),
            json!({"decision": "approve", "route": route}),
        )
        .await
    }

    /// A tool result, so the executions it names are linked to the session.
    pub async fn tool_result(&self, session: Uuid, text: &str) -> Result<Vec<String>> {
        let answer = self
            .send(
                reqwest::Method::POST,
                &format!("/v1/sessions/{session}/tool-results"),
                json!({"text": text}),
            )
            .await?;
        let linked = answer["linked"].as_array().map(|ids| {
            ids.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        });
        Ok(linked.unwrap_or_default())
    }

    /// An execution's new state.
    pub async fn put_execution(&self, id: Uuid, status: &str, result: &str) -> Result<()> {
        self.send(
            reqwest::Method::PUT,
            &format!("/v1/executions/{id}"),
            json!({"status": status, "result": result}),
        )
        .await
        .map(drop)
    }
}
