// The seed's story, played by a runtime against a running `serve`:
//
//	NOMOS_URL=http://127.0.0.1:7300 NOMOS_TOKEN=... \
//	NOMOS_WEBHOOK_SECRET=whsec_... RECEIVER_PORT=9000 go run ./examples/story
//
// with `serve --agent-webhook http://127.0.0.1:9000/hooks/nomos
// --webhook-secret whsec_... --token ...`. The operator approves; a tool
// answers "running" and names its execution; it fails; the continuation
// arrives at this runtime's webhook, its signature checked; the note the
// agent would be re-invoked with is printed.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	nomos "github.com/nomos/nomos-continue/clients/go"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	receiver, err := nomos.NewReceiver(os.Getenv("NOMOS_WEBHOOK_SECRET"))
	if err != nil {
		return err
	}
	events := make(chan nomos.Event, 8)
	mux := http.NewServeMux()
	mux.Handle("/hooks/nomos", receiver.Handler(func(e nomos.Event) error {
		events <- e
		return nil
	}))
	listener, err := net.Listen("tcp", "127.0.0.1:"+getenv("RECEIVER_PORT", "9000"))
	if err != nil {
		return err
	}
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = server.Serve(listener) }()
	defer server.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := nomos.New(os.Getenv("NOMOS_URL"), os.Getenv("NOMOS_TOKEN"))
	session, execution := nomos.NewID(), nomos.NewID()
	approved, err := client.Approve(ctx, session, 0)
	if err != nil {
		return err
	}
	fmt.Printf("approved: session %s until %s\n", session, approved.Window.ExpiresAt)
	linked, err := client.LinkToolResult(ctx, session, "pct_create started: running, execution "+execution)
	if err != nil {
		return err
	}
	fmt.Printf("linked: %d execution(s)\n", len(linked.Linked))
	if _, err := client.RecordExecution(ctx, execution, "failed", "ssh: connect to host 10.0.0.7 port 22: Connection refused"); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("no continuation within 60 s")
	case event := <-events:
		if event.Continuation == nil || event.Continuation.SessionID != session {
			return fmt.Errorf("expected this session's continuation, got %+v", event)
		}
		fmt.Printf("continued: session %s (signature checked)\n", event.Continuation.SessionID)
		fmt.Println("note the agent is re-invoked with:")
		fmt.Println(event.Continuation.Note)
	}
	return nil
}

func getenv(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}
