package nomoscontinue

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Tolerance is how far a request's timestamp may be from this clock.
const Tolerance = 5 * time.Minute

// ErrSignature is wrapped by every refusal of a request nomos-continue did
// not send (or sent too long ago).
var ErrSignature = errors.New("webhook signature")

// ErrUnknownEvent is a verified request of a type this client does not
// know (a later version): refused rather than guessed at.
var ErrUnknownEvent = errors.New("unknown webhook event")

// ExecutionReport is one finished execution folded into a continuation.
type ExecutionReport struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Outcome string `json:"outcome"`
	Result  string `json:"result"`
}

// Event is a continuation.v1 (Continuation set) or a notice.v1 (Notice set).
type Event struct {
	Type         string
	Timestamp    string
	Traceparent  string
	Continuation *Continuation
	Notice       *Notice
}

// IdempotencyKey is the event's key, the same on every redelivery.
func (e Event) IdempotencyKey() string {
	if e.Continuation != nil {
		return e.Continuation.IdempotencyKey
	}
	return e.Notice.IdempotencyKey
}

// Continuation: re-invoke the session's agent with Note after the history
// (as context, not a typed turn) and Soul in its system prompt.
type Continuation struct {
	SessionID      string            `json:"session_id"`
	IdempotencyKey string            `json:"idempotency_key"`
	Executions     []ExecutionReport `json:"executions"`
	Note           string            `json:"note"`
	Soul           string            `json:"soul"`
}

// Notice: show it to the session's operator; do not run the agent.
type Notice struct {
	SessionID      string `json:"session_id"`
	IdempotencyKey string `json:"idempotency_key"`
	Notice         string `json:"notice"`
}

// Receiver verifies and reads the webhook's requests for its secrets
// (whsec_…; two while one is rotated).
type Receiver struct {
	keys      [][]byte
	tolerance time.Duration
	now       func() time.Time

	mu       sync.Mutex
	accepted map[string]bool
	handling map[string]bool
}

// NewReceiver is a receiver for secrets.
func NewReceiver(secrets ...string) (*Receiver, error) {
	if len(secrets) == 0 {
		return nil, errors.New("at least one webhook secret (whsec_...)")
	}
	r := &Receiver{tolerance: Tolerance, now: time.Now, accepted: map[string]bool{}, handling: map[string]bool{}}
	for _, secret := range secrets {
		if !strings.HasPrefix(secret, "whsec_") {
			return nil, errors.New("a webhook secret starts with whsec_")
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if err != nil {
			return nil, fmt.Errorf("a webhook secret's key is base64: %w", err)
		}
		r.keys = append(r.keys, key)
	}
	return r, nil
}

// Verify checks the timestamp and the signatures of one request (its raw
// body and headers) and reads its event.
func (r *Receiver) Verify(body []byte, header http.Header) (Event, error) {
	id := header.Get("webhook-id")
	stamp := header.Get("webhook-timestamp")
	signatures := header.Get("webhook-signature")
	if id == "" || stamp == "" || signatures == "" {
		return Event{}, fmt.Errorf("%w: missing webhook-id, webhook-timestamp or webhook-signature", ErrSignature)
	}
	seconds, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return Event{}, fmt.Errorf("%w: webhook-timestamp %q is not Unix seconds", ErrSignature, stamp)
	}
	skew := r.now().Sub(time.Unix(seconds, 0))
	if skew > r.tolerance || skew < -r.tolerance {
		return Event{}, fmt.Errorf("%w: webhook-timestamp is outside the tolerance (a replay?)", ErrSignature)
	}
	signed := append([]byte(id+"."+stamp+"."), body...)
	matched := false
	for _, key := range r.keys {
		mac := hmac.New(sha256.New, key)
		mac.Write(signed)
		expected := []byte(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		for _, entry := range strings.Fields(signatures) {
			if strings.HasPrefix(entry, "v1,") && hmac.Equal([]byte(entry[3:]), expected) {
				matched = true
			}
		}
	}
	if !matched {
		return Event{}, fmt.Errorf("%w: no signature matches a configured secret", ErrSignature)
	}
	return ParseEvent(body, header.Get("traceparent"))
}

// ParseEvent reads a verified body.
func ParseEvent(body []byte, traceparent string) (Event, error) {
	var envelope struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return Event{}, fmt.Errorf("%w: not a nomos-continue envelope: %v", ErrUnknownEvent, err)
	}
	event := Event{Type: envelope.Type, Timestamp: envelope.Timestamp, Traceparent: traceparent}
	var err error
	switch envelope.Type {
	case "continuation.v1":
		event.Continuation = &Continuation{}
		err = json.Unmarshal(envelope.Data, event.Continuation)
	case "notice.v1":
		event.Notice = &Notice{}
		err = json.Unmarshal(envelope.Data, event.Notice)
	default:
		return Event{}, fmt.Errorf("%w: %q", ErrUnknownEvent, envelope.Type)
	}
	if err != nil {
		return Event{}, fmt.Errorf("%w: %s's data: %v", ErrUnknownEvent, envelope.Type, err)
	}
	return event, nil
}

// Handler is the whole receiver for net/http: verify, refuse, de-duplicate
// by key, call onEvent once per key (it should store or queue the agent's
// turn, not run it), and answer as the service expects: 200 once accepted
// (and again for a key already taken), 409 while the key is being handled,
// 401 for a bad signature, 400 for an unknown type, 503 when onEvent
// failed (the delivery is tried again).
func (r *Receiver) Handler(onEvent func(Event) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, request *http.Request) {
		body, err := io.ReadAll(request.Body)
		if err != nil {
			answer(w, http.StatusBadRequest, "the body could not be read")
			return
		}
		event, err := r.Verify(body, request.Header)
		switch {
		case errors.Is(err, ErrUnknownEvent):
			answer(w, http.StatusBadRequest, err.Error())
			return
		case err != nil:
			answer(w, http.StatusUnauthorized, err.Error())
			return
		}
		key := event.IdempotencyKey()
		r.mu.Lock()
		if r.accepted[key] {
			r.mu.Unlock()
			answer(w, http.StatusOK, "")
			return
		}
		if r.handling[key] {
			r.mu.Unlock()
			answer(w, http.StatusConflict, "this key is being handled")
			return
		}
		r.handling[key] = true
		r.mu.Unlock()
		failed := onEvent(event)
		r.mu.Lock()
		delete(r.handling, key)
		if failed == nil {
			r.accepted[key] = true
		}
		r.mu.Unlock()
		if failed != nil {
			answer(w, http.StatusServiceUnavailable, "the runtime could not take it: "+failed.Error())
			return
		}
		answer(w, http.StatusOK, "")
	})
}

func answer(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body := map[string]string{}
	if detail != "" {
		body["detail"] = detail
	}
	_ = json.NewEncoder(w).Encode(body)
}

// PushNotificationConfig is nomos-continue's push configuration (a
// session's, or a task's "push") in the A2A JSON shape: for a message's
// configuration (1.0 taskPushNotificationConfig, 0.3
// pushNotificationConfig) or, with TaskID, a task's registration.
type PushNotificationConfig struct {
	TaskID         string `json:"taskId,omitempty"`
	URL            string `json:"url"`
	Token          string `json:"token"`
	Authentication struct {
		Scheme      string   `json:"scheme,omitempty"`
		Schemes     []string `json:"schemes,omitempty"`
		Credentials string   `json:"credentials"`
	} `json:"authentication"`
}

// A2APushConfig is the A2A shape of url and token for version "1.0" (scheme)
// or "0.3" (schemes), for the task taskID ("" in a message's configuration).
func A2APushConfig(pushURL, token, version, taskID string) PushNotificationConfig {
	config := PushNotificationConfig{TaskID: taskID, URL: pushURL, Token: token}
	config.Authentication.Credentials = token
	if version == "0.3" {
		config.Authentication.Schemes = []string{"Bearer"}
	} else {
		config.Authentication.Scheme = "Bearer"
	}
	return config
}
