package nomoscontinue

import "time"

// Window is a session's assent window.
type Window struct {
	OpenedAt      time.Time  `json:"opened_at"`
	ExpiresAt     time.Time  `json:"expires_at"`
	Open          bool       `json:"open"`
	Route         string     `json:"route"`
	Continuations int        `json:"continuations"`
	ClosedAt      *time.Time `json:"closed_at"`
}

// ApprovalAnswer is the window as it is now (nil once denied).
type ApprovalAnswer struct {
	Window *Window `json:"window"`
}

// LinkAnswer is what a tool result linked.
type LinkAnswer struct {
	Linked          []string `json:"linked"`
	AlreadyLinked   []string `json:"already_linked"`
	LinkedElsewhere []struct {
		ExecutionID string `json:"execution_id"`
		SessionID   string `json:"session_id"`
	} `json:"linked_elsewhere"`
	Tasks []struct {
		ExecutionID string `json:"execution_id"`
		Protocol    string `json:"protocol"`
		TaskID      string `json:"task_id"`
	} `json:"tasks"`
	PolicyRevision string `json:"policy_revision"`
}

// Execution is an execution as stored.
type Execution struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	Result     string     `json:"result"`
	Terminal   bool       `json:"terminal"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// ExecutionRecorded is what a status report did.
type ExecutionRecorded struct {
	Execution Execution `json:"execution"`
	Applied   bool      `json:"applied"`
	Note      *string   `json:"note"`
}

// ExecutionView is an execution (nil before its first report) and its session.
type ExecutionView struct {
	Execution *Execution `json:"execution"`
	SessionID *string    `json:"session_id"`
}

// PushAuthentication is a push token as an Authorization scheme and credentials.
type PushAuthentication struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials"`
}

// TaskPush is one task's push configuration.
type TaskPush struct {
	URL            string             `json:"url"`
	Token          string             `json:"token"`
	Authentication PushAuthentication `json:"authentication"`
	ExpiresAt      time.Time          `json:"expires_at"`
}

// TaskRegistered is a registered task: its execution and, for A2A, its push configuration.
type TaskRegistered struct {
	ExecutionID string    `json:"execution_id"`
	Linked      bool      `json:"linked"`
	Push        *TaskPush `json:"push"`
}

// SessionPush is a session's push configuration (MintSessionPush).
type SessionPush struct {
	URL            string             `json:"url"`
	Token          string             `json:"token"`
	Authentication PushAuthentication `json:"authentication"`
	LinksUntil     time.Time          `json:"links_until"`
	MaxTasks       int                `json:"max_tasks"`
}

// McpTaskRecorded is what an MCP task update did.
type McpTaskRecorded struct {
	ExecutionID string     `json:"execution_id"`
	Execution   *Execution `json:"execution"`
	Applied     bool       `json:"applied"`
	Note        *string    `json:"note"`
}

// Delivery is one ledger row.
type Delivery struct {
	ID             string     `json:"id"`
	SessionID      string     `json:"session_id"`
	Kind           string     `json:"kind"`
	IdempotencyKey string     `json:"idempotency_key"`
	ExecutionIDs   []string   `json:"execution_ids"`
	Note           string     `json:"note"`
	PolicyRevision string     `json:"policy_revision"`
	State          string     `json:"state"`
	FailedAttempts int        `json:"failed_attempts"`
	LastError      *string    `json:"last_error"`
	NextAttemptAt  time.Time  `json:"next_attempt_at"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	DeliveredAt    *time.Time `json:"delivered_at"`
}

// RetryAnswer is the delivery, pending again.
type RetryAnswer struct {
	Delivery Delivery `json:"delivery"`
}

// decode reads a JSON answer into T.
func decode[T any](answer Object, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	var typed T
	if err := remarshal(answer, &typed); err != nil {
		return nil, err
	}
	return &typed, nil
}
