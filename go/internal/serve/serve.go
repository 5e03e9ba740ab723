// Package serve runs an http.Server until SIGTERM or Ctrl-C, then shuts it down within a
// bound, as every lab server must (the launcher waits 5 s before it kills).
// It is the one Go process of a target: SIGTERM to it or to its process group is the same.
package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// GracefulTimeout is how long requests in flight may finish after SIGTERM (/info's
// graceful_timeout_s); then their connections are closed and the process exits, well
// within the 5 s the launcher gives.
const GracefulTimeout = 3 * time.Second

// Env returns the trimmed value of an environment variable, or def when it is empty.
func Env(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

// Listen listens on $HOST:$PORT (defaults 127.0.0.1 and defPort).
func Listen(defPort string) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort(Env("HOST", "127.0.0.1"), Env("PORT", defPort)))
}

// Run serves on ln until SIGTERM or Ctrl-C (RunUntil). started is called once the server
// is accepting.
func Run(srv *http.Server, ln net.Listener, started func()) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return RunUntil(ctx, srv, ln, func() {
		if started != nil {
			started()
		}
		go func() {
			<-ctx.Done()
			stop() // a second signal kills the process the default way
		}()
	})
}

// RunUntil serves on ln until ctx ends, then shuts down: requests still running after
// GracefulTimeout (long sleeps) are cut off (http.Server.Shutdown, then Close).
func RunUntil(ctx context.Context, srv *http.Server, ln net.Listener, started func()) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if started != nil {
		started()
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), GracefulTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
