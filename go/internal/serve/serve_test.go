package serve

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// A 10 s request in flight at shutdown gets GracefulTimeout, then its connection is
// closed and RunUntil returns: well within the 5 s the launcher gives after SIGTERM.
func TestShutdownCutsALongRequest(t *testing.T) {
	if GracefulTimeout > 3*time.Second {
		t.Fatalf("GracefulTimeout %v: the contract allows at most 3 s", GracefulTimeout)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inFlight := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inFlight)
		time.Sleep(10 * time.Second) // like /sync?ms=10000: does not watch the request's end
	})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunUntil(ctx, srv, ln, nil) }()
	reqErr := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/sync")
		if err == nil {
			resp.Body.Close()
		}
		reqErr <- err
	}()
	<-inFlight
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		took := time.Since(start)
		if err != nil || took < GracefulTimeout || took > GracefulTimeout+time.Second {
			t.Errorf("RunUntil returned %v after %v; want nil after about %v", err, took, GracefulTimeout)
		}
	case <-time.After(GracefulTimeout + 2*time.Second):
		t.Fatal("RunUntil did not return")
	}
	if err := <-reqErr; err == nil {
		t.Error("the 10 s request was answered; it should have been cut")
	}
}

// Without requests in flight, shutdown is immediate.
func TestShutdownIdleIsQuick(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := RunUntil(ctx, &http.Server{Handler: http.NotFoundHandler()}, ln, nil); err != nil || time.Since(start) > time.Second {
		t.Errorf("idle shutdown: %v after %v", err, time.Since(start))
	}
}
