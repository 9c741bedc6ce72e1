package nomoscontinue

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Object is a JSON object of the API, as docs/openapi.json describes it.
type Object = map[string]any

// Problem is a refusal of the API: its problem document (RFC 9457).
type Problem struct {
	Status     int
	Type       string
	Title      string
	Detail     string
	RequestID  string
	RetryAfter time.Duration // zero when the answer named none
	Body       Object
}

func (p *Problem) Error() string {
	return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail)
}

// Kind is the problem type after `urn:nomos-continue:problem:`.
func (p *Problem) Kind() string {
	return p.Type[strings.LastIndex(p.Type, ":")+1:]
}

// Retryable says whether the condition passes: a 429 or 503 that says when.
func (p *Problem) Retryable() bool {
	return (p.Status == 429 || p.Status == 503) && p.RetryAfter > 0
}

// Client is one runtime's connection to nomos-continue.
type Client struct {
	base       string
	token      string
	http       *http.Client
	retries    int
	maxBackoff time.Duration
}

// Option changes a Client's defaults.
type Option func(*Client)

// WithHTTPClient sends through c (its Timeout bounds each try; 10 s by default).
func WithHTTPClient(c *http.Client) Option { return func(cl *Client) { cl.http = c } }

// WithRetries sets the tries after the first of a write safe to repeat.
func WithRetries(n int) Option { return func(cl *Client) { cl.retries = n } }

// New is a client of the API at baseURL with the runtime token (or "").
func New(baseURL, token string, options ...Option) *Client {
	c := &Client{
		base:       strings.TrimRight(baseURL, "/"),
		token:      token,
		http:       &http.Client{Timeout: 10 * time.Second},
		retries:    3,
		maxBackoff: 5 * time.Second,
	}
	for _, option := range options {
		option(c)
	}
	return c
}

type traceKey struct{}

// WithTraceparent carries a W3C traceparent to the writes made under ctx.
func WithTraceparent(ctx context.Context, traceparent string) context.Context {
	return context.WithValue(ctx, traceKey{}, traceparent)
}

// --- sessions ---------------------------------------------------------------

// LinkToolResult posts a tool's answer; the policy links the executions it names.
func (c *Client) LinkToolResult(ctx context.Context, sessionID, text string) (*LinkAnswer, error) {
	return decode[LinkAnswer](c.write(ctx, "POST", "/v1/sessions/"+sessionID+"/tool-results", Object{"text": text}, false))
}

// DecideApproval approves (opens or extends the assent window) or denies.
// minutes 0 is the default (30); route "" is the default (api).
func (c *Client) DecideApproval(ctx context.Context, sessionID, decision, route string, minutes int) (*ApprovalAnswer, error) {
	body := Object{"decision": decision}
	if route != "" {
		body["route"] = route
	}
	if minutes != 0 {
		body["minutes"] = minutes
	}
	return decode[ApprovalAnswer](c.write(ctx, "POST", "/v1/sessions/"+sessionID+"/approvals", body, false))
}

// Approve opens the session's window for minutes (0: the whole 30).
func (c *Client) Approve(ctx context.Context, sessionID string, minutes int) (*ApprovalAnswer, error) {
	return c.DecideApproval(ctx, sessionID, "approve", "api", minutes)
}

// Deny closes the session's window.
func (c *Client) Deny(ctx context.Context, sessionID string) (*ApprovalAnswer, error) {
	return c.DecideApproval(ctx, sessionID, "deny", "", 0)
}

// RecordTurn records a chat turn for chatWith; sent with an Idempotency-Key.
func (c *Client) RecordTurn(ctx context.Context, sessionID, role, content string) (Object, error) {
	return c.write(ctx, "POST", "/v1/sessions/"+sessionID+"/turns", Object{"role": role, "content": content}, true)
}

// Sessions lists sessions (query: filter, status, limit, cursor).
func (c *Client) Sessions(ctx context.Context, query url.Values) (Object, error) {
	return c.read(ctx, "/v1/sessions", query)
}

// Session is one session's summary.
func (c *Client) Session(ctx context.Context, sessionID string) (Object, error) {
	return c.read(ctx, "/v1/sessions/"+sessionID, nil)
}

// Links is a page of the session's links.
func (c *Client) Links(ctx context.Context, sessionID string, query url.Values) (Object, error) {
	return c.read(ctx, "/v1/sessions/"+sessionID+"/links", query)
}

// Deliveries is a page of the session's deliveries.
func (c *Client) Deliveries(ctx context.Context, sessionID string, query url.Values) (Object, error) {
	return c.read(ctx, "/v1/sessions/"+sessionID+"/deliveries", query)
}

// Notices is a page of the session's notices.
func (c *Client) Notices(ctx context.Context, sessionID string, query url.Values) (Object, error) {
	return c.read(ctx, "/v1/sessions/"+sessionID+"/notices", query)
}

// Overview is what is in flight, failing or unheard over every session.
func (c *Client) Overview(ctx context.Context) (Object, error) {
	return c.read(ctx, "/v1/overview", nil)
}

// --- executions -------------------------------------------------------------

// RecordExecution reports an execution's state (running, completed, failed, ...).
func (c *Client) RecordExecution(ctx context.Context, executionID, status, result string) (*ExecutionRecorded, error) {
	return decode[ExecutionRecorded](c.write(ctx, "PUT", "/v1/executions/"+executionID, Object{"status": status, "result": result}, false))
}

// Execution is the execution as stored.
func (c *Client) Execution(ctx context.Context, executionID string) (*ExecutionView, error) {
	return decode[ExecutionView](c.read(ctx, "/v1/executions/"+executionID, nil))
}

// --- protocol tasks ---------------------------------------------------------

// TaskAgent is the remote A2A agent a task runs on (Version "1.0" or "0.3").
type TaskAgent struct {
	URL     string `json:"url"`
	Version string `json:"version"`
}

// RegisterTask links a protocol task ("a2a", "mcp") to the session; for A2A
// the answer's "push" is its push configuration. agent may be nil, ttl 0.
func (c *Client) RegisterTask(ctx context.Context, sessionID, protocol, taskID string, agent *TaskAgent, ttl time.Duration) (*TaskRegistered, error) {
	body := Object{"protocol": protocol, "task_id": taskID}
	if agent != nil {
		body["agent"] = agent
	}
	if ttl > 0 {
		body["ttl_seconds"] = int64(ttl / time.Second)
	}
	return decode[TaskRegistered](c.write(ctx, "POST", "/v1/sessions/"+sessionID+"/tasks", body, false))
}

// MintSessionPush mints a push configuration for every A2A task the
// session's agent will create (ttl 0: until the session's window ends).
func (c *Client) MintSessionPush(ctx context.Context, sessionID string, ttl time.Duration) (*SessionPush, error) {
	body := Object{}
	if ttl > 0 {
		body["ttl_seconds"] = int64(ttl / time.Second)
	}
	return decode[SessionPush](c.write(ctx, "POST", "/v1/sessions/"+sessionID+"/push-configs", body, false))
}

// RecordMcpTask forwards what the runtime's MCP client got about a task
// (taskID "" when the answer names it).
func (c *Client) RecordMcpTask(ctx context.Context, answer Object, taskID string) (*McpTaskRecorded, error) {
	path := "/v1/mcp/tasks"
	if taskID != "" {
		path += "?task_id=" + url.QueryEscape(taskID)
	}
	return decode[McpTaskRecorded](c.write(ctx, "POST", path, answer, false))
}

// --- deliveries, policy, service --------------------------------------------

// Delivery is one ledger row.
func (c *Client) Delivery(ctx context.Context, deliveryID string) (*Delivery, error) {
	return decode[Delivery](c.read(ctx, "/v1/deliveries/"+deliveryID, nil))
}

// Retry sends a failed delivery again under its key; with an Idempotency-Key.
func (c *Client) Retry(ctx context.Context, deliveryID string) (*RetryAnswer, error) {
	return decode[RetryAnswer](c.write(ctx, "POST", "/v1/deliveries/"+deliveryID+"/retry", Object{}, true))
}

// PolicyInfo is the active policy revision and its contract.
func (c *Client) PolicyInfo(ctx context.Context) (Object, error) {
	return c.read(ctx, "/v1/policy", nil)
}

// Healthz answers while the process runs.
func (c *Client) Healthz(ctx context.Context) (Object, error) { return c.read(ctx, "/healthz", nil) }

// Readyz answers 200 once the database is reachable and migrated.
func (c *Client) Readyz(ctx context.Context) (Object, error) { return c.read(ctx, "/readyz", nil) }

// --- the wire ---------------------------------------------------------------

func (c *Client) read(ctx context.Context, path string, query url.Values) (Object, error) {
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	return c.send(ctx, "GET", path, nil, nil)
}

func (c *Client) write(ctx context.Context, method, path string, body Object, keyed bool) (Object, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	headers := http.Header{"Content-Type": {"application/json"}}
	if keyed {
		// One key for every try of this one call.
		headers.Set("Idempotency-Key", NewID())
	}
	if trace, ok := ctx.Value(traceKey{}).(string); ok && trace != "" {
		headers.Set("traceparent", trace)
	}
	return c.send(ctx, method, path, raw, headers)
}

func (c *Client) send(ctx context.Context, method, path string, body []byte, headers http.Header) (Object, error) {
	wait := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		last := attempt >= c.retries
		request, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		for name, values := range headers {
			request.Header[name] = values
		}
		if c.token != "" {
			request.Header.Set("Authorization", "Bearer "+c.token)
		}
		response, err := c.http.Do(request)
		if err != nil {
			if last || ctx.Err() != nil {
				return nil, fmt.Errorf("%s %s: %w", method, path, err)
			}
			if !pause(ctx, wait) {
				return nil, ctx.Err()
			}
			wait = minDuration(wait*2, c.maxBackoff)
			continue
		}
		answer, problem := read(response)
		if problem == nil {
			return answer, nil
		}
		if last || !problem.Retryable() {
			return nil, problem
		}
		if !pause(ctx, minDuration(problem.RetryAfter, c.maxBackoff)) {
			return nil, ctx.Err()
		}
		wait = minDuration(wait*2, c.maxBackoff)
	}
}

func read(response *http.Response) (Object, *Problem) {
	defer response.Body.Close()
	raw, _ := io.ReadAll(response.Body)
	var body Object
	_ = json.Unmarshal(raw, &body)
	if response.StatusCode < 300 {
		if body == nil {
			body = Object{}
		}
		return body, nil
	}
	text := func(key string) string { s, _ := body[key].(string); return s }
	problem := &Problem{
		Status:    response.StatusCode,
		Type:      text("type"),
		Title:     text("title"),
		Detail:    text("detail"),
		RequestID: text("request_id"),
		Body:      body,
	}
	if problem.Type == "" {
		problem.Type = "about:blank"
	}
	if problem.RequestID == "" {
		problem.RequestID = response.Header.Get("x-request-id")
	}
	if seconds, err := strconv.Atoi(response.Header.Get("Retry-After")); err == nil && seconds > 0 {
		problem.RetryAfter = time.Duration(seconds) * time.Second
	}
	return nil, problem
}

// AsProblem is the Problem in err's chain, if there is one.
func AsProblem(err error) (*Problem, bool) {
	var problem *Problem
	ok := errors.As(err, &problem)
	return problem, ok
}

func pause(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

// NewID is a random (version 4) UUID: an Idempotency-Key, or a session's or
// an execution's id.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func remarshal(from any, to any) error {
	raw, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, to)
}
