//! `chatWith` against a fake server that speaks the OpenAI chat-completions
//! protocol, with an in-memory [`ChatHistory`] standing in for the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use nomos_continue::agent::chat::{DEFAULT_BUDGET_CHARS, NOTE_LABEL};
use nomos_continue::agent::{
    async_trait, AdapterConfigError, Agent, ChatAgent, ChatConfig, ChatHistory, ChatTurn,
    HistoryError,
};
use nomos_continue_tests::http::{RecordedRequest, RecordingServer, Reply, Script};
use serde_json::{json, Value};
use uuid::Uuid;

use super::{continuation, notice, permanent, retryable, SESSION, TRACEPARENT};

/// A stored turn and, for a reply, the key of the continuation it answers.
type KeyedTurn = (ChatTurn, Option<String>);

/// The stored history of the tests: turns (with the key of a stored reply)
/// and notices, per session. Dedupes by key as the trait requires.
#[derive(Default)]
struct MemoryHistory {
    turns: Mutex<HashMap<Uuid, Vec<KeyedTurn>>>,
    notices: Mutex<HashMap<Uuid, Vec<(String, String)>>>,
    unavailable: bool,
}

impl MemoryHistory {
    fn with(turns: &[(&str, &str)]) -> Arc<Self> {
        let history = Self::default();
        history.turns.lock().expect("lock").insert(
            SESSION,
            turns
                .iter()
                .map(|(role, content)| (ChatTurn::new(*role, *content), None))
                .collect(),
        );
        Arc::new(history)
    }

    fn stored(&self) -> Vec<ChatTurn> {
        let turns = self.turns.lock().expect("lock");
        let stored = turns.get(&SESSION).cloned().unwrap_or_default();
        stored.into_iter().map(|(turn, _)| turn).collect()
    }

    fn notices(&self) -> Vec<(String, String)> {
        let notices = self.notices.lock().expect("lock");
        notices.get(&SESSION).cloned().unwrap_or_default()
    }

    fn check(&self) -> Result<(), HistoryError> {
        if self.unavailable {
            return Err(HistoryError::Unavailable("database is down".to_string()));
        }
        Ok(())
    }
}

#[async_trait]
impl ChatHistory for MemoryHistory {
    async fn turns(&self, session: Uuid) -> Result<Vec<ChatTurn>, HistoryError> {
        self.check()?;
        let turns = self.turns.lock().expect("lock");
        let stored = turns.get(&session).cloned().unwrap_or_default();
        Ok(stored.into_iter().map(|(turn, _)| turn).collect())
    }

    async fn has_reply(&self, session: Uuid, key: &str) -> Result<bool, HistoryError> {
        self.check()?;
        let turns = self.turns.lock().expect("lock");
        let stored = turns.get(&session).map(Vec::as_slice).unwrap_or_default();
        Ok(stored.iter().any(|(_, k)| k.as_deref() == Some(key)))
    }

    async fn append_assistant(
        &self,
        session: Uuid,
        content: &str,
        key: &str,
    ) -> Result<(), HistoryError> {
        self.check()?;
        let mut turns = self.turns.lock().expect("lock");
        let stored = turns.entry(session).or_default();
        if !stored.iter().any(|(_, k)| k.as_deref() == Some(key)) {
            stored.push((ChatTurn::new("assistant", content), Some(key.to_string())));
        }
        Ok(())
    }

    async fn append_notice(
        &self,
        session: Uuid,
        message: &str,
        key: &str,
    ) -> Result<(), HistoryError> {
        self.check()?;
        let mut notices = self.notices.lock().expect("lock");
        let stored = notices.entry(session).or_default();
        if !stored.iter().any(|(k, _)| k == key) {
            stored.push((key.to_string(), message.to_string()));
        }
        Ok(())
    }
}

const API_KEY: &str = "sk-test";
const MODEL: &str = "test-model";
/// The fake model's context window, in characters of message text: a
/// longer request is refused with a 400, as a real endpoint does.
const CONTEXT_CHARS: usize = 20_000;

/// Checks a request as an OpenAI-compatible server would; `None` if valid.
fn protocol_error(request: &RecordedRequest) -> Option<Reply> {
    let error = |status: u16, message: &str| {
        Some(Reply::json(
            status,
            &json!({"error": {"message": message, "type": "invalid_request_error"}}),
        ))
    };
    if request.method != "POST" || request.path != "/v1/chat/completions" {
        return error(404, "unknown route");
    }
    if request.header("authorization") != Some(&format!("Bearer {API_KEY}")) {
        return error(401, "invalid api key");
    }
    let Some(body) = request.json() else {
        return error(400, "body is not JSON");
    };
    if body["model"] != MODEL {
        return error(404, "model not found");
    }
    let Some(messages) = body["messages"].as_array().filter(|m| !m.is_empty()) else {
        return error(400, "messages must be a non-empty array");
    };
    let well_formed = messages.iter().enumerate().all(|(i, m)| {
        let role_ok = match m["role"].as_str() {
            // Like many servers' chat templates: system only first.
            Some("system") => i == 0,
            Some("user" | "assistant") => true,
            _ => false,
        };
        role_ok && m["content"].is_string() && m.as_object().is_some_and(|o| o.len() == 2)
    });
    if !well_formed {
        return error(400, "malformed messages");
    }
    let size: usize = messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .map(|c| c.chars().count())
        .sum();
    if size > CONTEXT_CHARS {
        return error(400, "maximum context length exceeded");
    }
    None
}

/// A fake chat-completions server whose n-th reply is `reply #n`.
fn openai_script() -> Script {
    Script::from_fn(|request, index| {
        protocol_error(request).unwrap_or_else(|| {
            Reply::json(
                200,
                &json!({
                    "id": format!("chatcmpl-{index}"),
                    "object": "chat.completion",
                    "created": 1_764_475_200,
                    "model": MODEL,
                    "choices": [{
                        "index": 0,
                        "message": {"role": "assistant", "content": format!("reply #{index}")},
                        "finish_reason": "stop"
                    }],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
                }),
            )
        })
    })
}

async fn chat(script: Script, history: Arc<MemoryHistory>) -> (RecordingServer, ChatAgent) {
    let (_, server) = RecordingServer::start(script).await.expect("bind loopback");
    let mut config = ChatConfig::new(server.url(""), MODEL);
    config.api_key = Some(API_KEY.to_string());
    let agent = ChatAgent::new(config, history).expect("config");
    (server, agent)
}

fn messages(request: &RecordedRequest) -> Vec<(String, String)> {
    let body = request.json().expect("JSON body");
    let list = body["messages"].as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|m| {
            let field = |name: &str| m[name].as_str().unwrap_or_default().to_string();
            (field("role"), field("content"))
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(r, c)| (r.to_string(), c.to_string()))
        .collect()
}

/// The chat-completions request carries the continuation's trace context,
/// so the model call joins the trace of the tool call that started it.
#[tokio::test]
async fn chat_carries_the_trace_context_to_the_model() {
    let (server, agent) = chat(openai_script(), MemoryHistory::with(&[])).await;
    let mut traced = continuation("k-trace");
    traced.traceparent = Some(TRACEPARENT.to_string());
    traced.tracestate = Some("nomos=1".to_string());
    agent.continue_session(&traced).await.expect("continued");
    agent
        .continue_session(&continuation("k-plain"))
        .await
        .expect("continued");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].header("traceparent"), Some(TRACEPARENT));
    assert_eq!(requests[0].header("tracestate"), Some("nomos=1"));
    assert_eq!(requests[1].header("traceparent"), None);
}

#[tokio::test]
async fn chat_replays_history_appends_soul_and_labels_the_note_last() {
    let stored = [
        ("system", "You are the ops agent."),
        ("user", "create container 101"),
        (
            "assistant",
            "started, execution 3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        ),
        ("user", "and then install nginx"),
        ("assistant", "will do once it is up"),
    ];
    let history = MemoryHistory::with(&stored);
    let (server, agent) = chat(openai_script(), Arc::clone(&history)).await;
    let cont = continuation("k-1");

    agent.continue_session(&cont).await.expect("continued");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json().expect("JSON body");
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["stream"], Value::Bool(false));
    let system = format!("You are the ops agent.\n\n{}", cont.soul);
    let note = format!("{NOTE_LABEL}\n{}", cont.note);
    let expected = pairs(&[
        ("system", &system),
        ("user", "create container 101"),
        (
            "assistant",
            "started, execution 3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        ),
        ("user", "and then install nginx"),
        ("assistant", "will do once it is up"),
        ("user", &note),
    ]);
    assert_eq!(messages(&requests[0]), expected);
    assert!(NOTE_LABEL.contains("not operator input"));

    // Only the reply is stored: no note, no SOUL, nothing the operator
    // did not say.
    let mut after = pairs(&stored);
    after.push(("assistant".to_string(), "reply #0".to_string()));
    let got: Vec<(String, String)> = history
        .stored()
        .into_iter()
        .map(|t| (t.role, t.content))
        .collect();
    assert_eq!(got, after);
}

#[tokio::test]
async fn chat_without_a_stored_system_turn_sends_the_soul_alone() {
    let history = MemoryHistory::with(&[("user", "hello")]);
    let (server, agent) = chat(openai_script(), history).await;
    let cont = continuation("k-1");
    agent.continue_session(&cont).await.expect("continued");
    let sent = messages(&server.requests()[0]);
    let note = format!("{NOTE_LABEL}\n{}", cont.note);
    assert_eq!(
        sent,
        pairs(&[("system", &cont.soul), ("user", "hello"), ("user", &note)])
    );
}

#[tokio::test]
async fn chat_redelivery_with_the_same_key_stores_one_reply() {
    let history = MemoryHistory::with(&[("user", "go")]);
    let (server, agent) = chat(openai_script(), Arc::clone(&history)).await;

    agent
        .continue_session(&continuation("k-1"))
        .await
        .expect("first");
    agent
        .continue_session(&continuation("k-1"))
        .await
        .expect("redelivery");
    let replies = |h: &MemoryHistory| {
        h.stored()
            .into_iter()
            .filter(|t| t.role == "assistant")
            .map(|t| t.content)
            .collect::<Vec<_>>()
    };
    assert_eq!(replies(&history), ["reply #0"]);
    // The stored reply was found, so the model was not asked again.
    assert_eq!(server.requests().len(), 1);

    // A new continuation is a new turn, and replays the first reply.
    agent
        .continue_session(&continuation("k-2"))
        .await
        .expect("second");
    assert_eq!(replies(&history), ["reply #0", "reply #1"]);
    let sent = messages(&server.requests()[1]);
    assert_eq!(sent[sent.len() - 2], pairs(&[("assistant", "reply #0")])[0]);
    assert_eq!(sent.iter().filter(|(r, _)| r == "user").count(), 2);
}

#[tokio::test]
async fn chat_malformed_completion_is_permanent_and_stores_nothing() {
    for reply in [
        Reply::text(200, "<html>not json</html>"),
        Reply::json(200, &json!({"object": "chat.completion", "choices": []})),
        Reply::json(
            200,
            &json!({"choices": [{"index": 0, "message": {"role": "assistant"}}]}),
        ),
    ] {
        let history = MemoryHistory::with(&[("user", "go")]);
        let (_server, agent) = chat(Script::always(reply), Arc::clone(&history)).await;
        let text = permanent(agent.continue_session(&continuation("k")).await);
        assert!(text.contains("malformed chat completion"), "{text}");
        assert_eq!(history.stored(), [ChatTurn::new("user", "go")]);
    }
}

#[tokio::test]
async fn chat_http_failures_are_classified_and_store_nothing() {
    let history = MemoryHistory::with(&[("user", "go")]);
    let script = Script::queue(
        [Reply::text(500, "overloaded"), Reply::status(429)],
        Reply::status(200),
    );
    let (_server, agent) = chat(script, Arc::clone(&history)).await;
    retryable(agent.continue_session(&continuation("k")).await);
    retryable(agent.continue_session(&continuation("k")).await);
    assert_eq!(history.stored().len(), 1);

    // A wrong key is rejected by the fake server with 401: permanent.
    let (_, server) = RecordingServer::start(openai_script())
        .await
        .expect("bind loopback");
    let mut config = ChatConfig::new(format!("{}/v1/", server.url("")), MODEL);
    config.api_key = Some("sk-wrong".to_string());
    let agent = ChatAgent::new(config, history.clone()).expect("config");
    let text = permanent(agent.continue_session(&continuation("k")).await);
    assert!(
        text.contains("401") && text.contains("invalid api key"),
        "{text}"
    );
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
    assert_eq!(history.stored().len(), 1);
}

#[tokio::test]
async fn chat_unavailable_history_is_retryable_without_calling_the_model() {
    let history = Arc::new(MemoryHistory {
        unavailable: true,
        ..MemoryHistory::default()
    });
    let (server, agent) = chat(openai_script(), history).await;
    let text = retryable(agent.continue_session(&continuation("k")).await);
    assert!(text.contains("database is down"), "{text}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn chat_notice_is_recorded_for_the_operator_not_the_model() {
    let history = MemoryHistory::with(&[("user", "go")]);
    let (server, agent) = chat(openai_script(), Arc::clone(&history)).await;
    agent.notify(&notice("n-1")).await.expect("recorded");
    agent.notify(&notice("n-1")).await.expect("redelivery");
    assert_eq!(
        history.notices(),
        [("n-1".to_string(), notice("n-1").message)]
    );
    assert_eq!(history.stored(), [ChatTurn::new("user", "go")]);
    assert!(server.requests().is_empty());

    // The next continuation does not carry the notice to the model.
    agent
        .continue_session(&continuation("k"))
        .await
        .expect("continued");
    let sent = messages(&server.requests()[0]);
    assert!(sent
        .iter()
        .all(|(_, c)| !c.contains(&notice("n-1").message)));
}

/// A session longer than the model's context window: replayed whole, the
/// model refuses it for good; within a budget below the window, the oldest
/// turns are left out behind a marker that counts them, the newest are
/// replayed, and the continuation is delivered.
#[tokio::test]
async fn chat_replays_a_long_session_within_the_budget() {
    let mut stored = vec![("system".to_string(), "You are the ops agent.".to_string())];
    for i in 0..400 {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        stored.push((role.to_string(), format!("turn {i:03}: {}", "z".repeat(90))));
    }
    let refs: Vec<(&str, &str)> = stored
        .iter()
        .map(|(r, c)| (r.as_str(), c.as_str()))
        .collect();
    let history = MemoryHistory::with(&refs);
    let (_, server) = RecordingServer::start(openai_script())
        .await
        .expect("bind loopback");
    let agent = |budget_chars: usize| {
        let mut config = ChatConfig::new(server.url(""), MODEL);
        config.api_key = Some(API_KEY.to_string());
        config.budget_chars = budget_chars;
        ChatAgent::new(config, history.clone()).expect("config")
    };
    const {
        assert!(
            DEFAULT_BUDGET_CHARS > CONTEXT_CHARS,
            "the fake model is small"
        )
    };
    let text = permanent(
        agent(DEFAULT_BUDGET_CHARS)
            .continue_session(&continuation("k-0"))
            .await,
    );
    assert!(text.contains("context length"), "{text}");

    let cont = continuation("k-1");
    agent(CONTEXT_CHARS)
        .continue_session(&cont)
        .await
        .expect("delivered within the budget");
    let requests = server.requests();
    let sent = messages(&requests[requests.len() - 1]);
    let size: usize = sent.iter().map(|(_, c)| c.chars().count()).sum();
    assert!(size <= CONTEXT_CHARS, "{size} characters sent");
    assert_eq!(
        sent[0],
        pairs(&[(
            "system",
            &format!("You are the ops agent.\n\n{}", cont.soul)
        )])[0]
    );
    let (role, marker) = &sent[1];
    assert_eq!(role, "user");
    assert!(marker.starts_with(NOTE_LABEL), "{marker}");
    let kept = &sent[2..sent.len() - 1];
    let omitted = 400 - kept.len();
    assert!(
        omitted > 0 && marker.contains(&format!("{omitted} earlier turns")),
        "{marker}"
    );
    assert_eq!(
        kept,
        &pairs(&refs[refs.len() - kept.len()..])[..],
        "the newest turns"
    );
    assert_eq!(
        sent[sent.len() - 1].1,
        format!("{NOTE_LABEL}\n{}", cont.note)
    );
    let replies = history
        .stored()
        .into_iter()
        .filter(|t| t.role == "assistant")
        .count();
    assert_eq!(replies, 200 + 1, "the reply is stored");
}

#[test]
fn chat_configuration_needs_a_model() {
    let history: Arc<dyn ChatHistory> = Arc::new(MemoryHistory::default());
    let no_model = ChatAgent::new(ChatConfig::new("http://127.0.0.1:1", " "), history);
    assert_eq!(no_model.err(), Some(AdapterConfigError::Model));
}
