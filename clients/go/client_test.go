package nomoscontinue

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every operation of docs/openapi.json has a method (its operationId in
// Go's case), or is on the reviewed list of those left out on purpose
// (clients/left-out.json, shared by every client's drift test).
func TestEveryOperationHasAMethodOrAReason(t *testing.T) {
	listed, err := os.ReadFile("../left-out.json")
	if err != nil {
		t.Fatal(err)
	}
	var reviewed struct {
		LeftOut map[string]string `json:"left_out"`
	}
	if err := json.Unmarshal(listed, &reviewed); err != nil {
		t.Fatal(err)
	}
	leftOut := reviewed.LeftOut
	raw, err := os.ReadFile("../../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var document struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &document); err != nil {
		t.Fatal(err)
	}
	client := reflect.TypeOf(&Client{})
	seen := map[string]bool{}
	for _, item := range document.Paths {
		for method, op := range item {
			if method == "parameters" || op.OperationID == "" {
				continue
			}
			seen[op.OperationID] = true
			if _, ok := leftOut[op.OperationID]; ok {
				continue
			}
			if _, ok := client.MethodByName(goName(op.OperationID)); !ok {
				t.Errorf("operation %s has no method %s", op.OperationID, goName(op.OperationID))
			}
		}
	}
	if len(seen) < 20 {
		t.Fatalf("the document was read: %v", seen)
	}
	for op := range leftOut {
		if !seen[op] {
			t.Errorf("clients/left-out.json names %s, which the document no longer has", op)
		}
	}
}

func goName(operationID string) string {
	parts := strings.Split(operationID, "_")
	for i, part := range parts {
		parts[i] = strings.ToUpper(part[:1]) + part[1:]
	}
	return strings.Join(parts, "")
}

func newSecret(t *testing.T) string {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// signed signs body as Standard Webhooks do (HMAC-SHA256 over
// "id.timestamp.body", base64), with each secret.
func signed(t *testing.T, body string, key string, at time.Time, secrets ...string) http.Header {
	stamp := strconv.FormatInt(at.Unix(), 10)
	var signatures []string
	for _, secret := range secrets {
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		mac := hmac.New(sha256.New, raw)
		mac.Write([]byte(key + "." + stamp + "." + body))
		signatures = append(signatures, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return http.Header{
		"Webhook-Id":        {key},
		"Webhook-Timestamp": {stamp},
		"Webhook-Signature": {strings.Join(signatures, " ")},
	}
}

const continuation = `{"type":"continuation.v1","timestamp":"2026-12-01T16:20:31Z","data":{"session_id":"0c0ffee0-0000-4000-8000-000000000001","idempotency_key":"c-9f86","executions":[{"id":"3f25","status":"FAILED","outcome":"failed","result":"ssh: connection refused"}],"note":"execution 3f25 failed","soul":"You will be re-invoked."}}`
const notice = `{"type":"notice.v1","timestamp":"2026-12-01T16:24:02Z","data":{"session_id":"0c0ffee0-0000-4000-8000-000000000001","idempotency_key":"n-6b86","notice":"the window closed"}}`

func TestTheReceiverReadsVerifiesAndRefuses(t *testing.T) {
	secret, other := newSecret(t), newSecret(t)
	receiver, err := NewReceiver(other, secret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	event, err := receiver.Verify([]byte(continuation), signed(t, continuation, "c-9f86", now, secret))
	if err != nil || event.Continuation == nil || event.Continuation.Note != "execution 3f25 failed" {
		t.Fatalf("a continuation: %+v %v", event, err)
	}
	event, err = receiver.Verify([]byte(notice), signed(t, notice, "n-6b86", now, other))
	if err != nil || event.Notice == nil || event.Notice.Notice != "the window closed" {
		t.Fatalf("a notice under the other secret: %+v %v", event, err)
	}
	only, _ := NewReceiver(other)
	if _, err := only.Verify([]byte(continuation), signed(t, continuation, "c-9f86", now, secret)); !errors.Is(err, ErrSignature) {
		t.Fatalf("another secret's signature: %v", err)
	}
	if _, err := receiver.Verify([]byte(continuation+" "), signed(t, continuation, "c-9f86", now, secret)); !errors.Is(err, ErrSignature) {
		t.Fatalf("a changed body: %v", err)
	}
	for _, skew := range []time.Duration{-301 * time.Second, 301 * time.Second} {
		header := signed(t, continuation, "c-9f86", now.Add(skew), secret)
		if _, err := receiver.Verify([]byte(continuation), header); !errors.Is(err, ErrSignature) {
			t.Fatalf("a timestamp %v away: %v", skew, err)
		}
	}
}

func TestTheHandlerAnswersAsTheServiceExpects(t *testing.T) {
	secret := newSecret(t)
	receiver, _ := NewReceiver(secret)
	var taken []Event
	var mu sync.Mutex
	fail := false
	handler := receiver.Handler(func(e Event) error {
		if fail {
			return errors.New("the queue is down")
		}
		mu.Lock()
		taken = append(taken, e)
		mu.Unlock()
		return nil
	})
	post := func(body, key string, secrets ...string) int {
		request := httptest.NewRequest("POST", "/hooks/nomos", strings.NewReader(body))
		request.Header = signed(t, body, key, time.Now(), secrets...)
		recorder := httptest.NewRecorder()
		handler.ServeHTTP(recorder, request)
		return recorder.Code
	}
	if code := post(continuation, "c-9f86", secret); code != 200 {
		t.Fatalf("accepted: %d", code)
	}
	if code := post(continuation, "c-9f86", secret); code != 200 || len(taken) != 1 {
		t.Fatalf("a key already taken: %d, %d events", code, len(taken))
	}
	later := strings.Replace(continuation, "continuation.v1", "continuation.v2", 1)
	if code := post(later, "c-2", secret); code != 400 {
		t.Fatalf("a later version: %d", code)
	}
	if code := post(notice, "n-1", newSecret(t)); code != 401 {
		t.Fatalf("a forgery: %d", code)
	}
	fail = true
	if code := post(notice, "n-2", secret); code != 503 {
		t.Fatalf("the runtime's failure: %d", code)
	}
	fail = false
	if code := post(notice, "n-2", secret); code != 200 || len(taken) != 2 {
		t.Fatalf("the retry after a failure: %d, %d events", code, len(taken))
	}
}

// The client against a real serve (NOMOS_URL, NOMOS_TOKEN: the tests'
// harness starts one; without it these skip, except under CI=true).
func live(t *testing.T) *Client {
	base := os.Getenv("NOMOS_URL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but NOMOS_URL is not set: the harness starts serve")
		}
		t.Skip("no serve to talk to (NOMOS_URL)")
	}
	return New(base, os.Getenv("NOMOS_TOKEN"))
}

func TestARefusalIsATypedProblem(t *testing.T) {
	client := live(t)
	ctx := context.Background()
	_, err := client.Approve(ctx, NewID(), 99)
	problem, ok := AsProblem(err)
	if !ok || problem.Status != 400 || problem.Kind() != "bad-request" || problem.RequestID == "" {
		t.Fatalf("a bad approval: %v %+v", err, problem)
	}
	wrong := New(os.Getenv("NOMOS_URL"), "not-the-token", WithRetries(0))
	_, err = wrong.Overview(ctx)
	if problem, ok := AsProblem(err); !ok || problem.Status != 401 || problem.Kind() != "unauthorized" {
		t.Fatalf("a wrong token: %v", err)
	}
}

// flaky drops the first request of each path before it is sent.
type flaky struct {
	mu      sync.Mutex
	dropped map[string]bool
	tries   []*http.Request
}

func (f *flaky) RoundTrip(request *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.tries = append(f.tries, request)
	first := !f.dropped[request.URL.Path]
	f.dropped[request.URL.Path] = true
	f.mu.Unlock()
	if first {
		return nil, errors.New("dropped on purpose")
	}
	return http.DefaultTransport.RoundTrip(request)
}

func TestARetriedWriteCarriesOneKeyAndTheTrace(t *testing.T) {
	live(t)
	transport := &flaky{dropped: map[string]bool{}}
	client := New(os.Getenv("NOMOS_URL"), os.Getenv("NOMOS_TOKEN"),
		WithHTTPClient(&http.Client{Transport: transport, Timeout: 10 * time.Second}))
	traceparent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := WithTraceparent(context.Background(), traceparent)
	session := NewID()
	if _, err := client.RecordTurn(ctx, session, "user", "deploy the container"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.LinkToolResult(ctx, session, "running, execution "+NewID()); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, try := range transport.tries {
		if strings.HasSuffix(try.URL.Path, "/turns") {
			keys = append(keys, try.Header.Get("Idempotency-Key"))
		}
		if try.Header.Get("traceparent") != traceparent {
			t.Errorf("%s went without the trace", try.URL.Path)
		}
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("one key for both tries of the turn: %v", keys)
	}
}

func TestTheProtocolsHelpers(t *testing.T) {
	client := live(t)
	ctx := context.Background()
	session := NewID()
	if _, err := client.Approve(ctx, session, 0); err != nil {
		t.Fatal(err)
	}
	push, err := client.MintSessionPush(ctx, session, 0)
	if err != nil || !strings.HasSuffix(push.URL, "/v1/a2a/sessions/"+session+"/push") || push.MaxTasks != 1000 {
		t.Fatalf("a session's push configuration: %+v %v", push, err)
	}
	config := A2APushConfig(push.URL, push.Token, "1.0", "")
	if config.Authentication.Scheme != "Bearer" || config.Authentication.Credentials != push.Token {
		t.Fatalf("the A2A 1.0 shape: %+v", config)
	}
	registered, err := client.RegisterTask(ctx, session, "a2a", "task-1", &TaskAgent{URL: "http://agent.test/a2a", Version: "0.3"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	per := A2APushConfig(registered.Push.URL, registered.Push.Token, "0.3", "task-1")
	if per.TaskID != "task-1" || per.Authentication.Schemes[0] != "Bearer" {
		t.Fatalf("the A2A 0.3 shape: %+v", per)
	}
	forwarded, err := client.RecordMcpTask(ctx, Object{"task": Object{"taskId": "mcp-1", "status": "working", "createdAt": "2026-12-06T00:00:00Z", "ttl": 60000}}, "")
	if err != nil || forwarded.ExecutionID == "" {
		t.Fatalf("an MCP task: %v %v", forwarded, err)
	}
}
