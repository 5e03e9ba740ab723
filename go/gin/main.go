// The Go target: Gin in release mode on net/http, one process, GOMAXPROCS threads.
//
// Endpoints, parameters and bounds come from contract/openapi.json, read at start-up
// ($LAB_CONTRACT, else found by walking up from the current directory).
// Environment: HOST (127.0.0.1), PORT (8000), UPSTREAM_URL (http://127.0.0.1:8001),
// LAB_TARGET (gin), LAB_PROFILE (release), POOL_PROCESSES (/cpu-pool workers, GOMAXPROCS).
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"

	"lab/go/internal/contract"
)

const shutdownTimeout = 4 * time.Second // the launcher waits 5 s after SIGTERM

func env(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

func configFromEnv() (config, error) {
	cfg := config{
		target:          env("LAB_TARGET", "gin"),
		profile:         env("LAB_PROFILE", "release"),
		upstreamURL:     strings.TrimRight(env("UPSTREAM_URL", "http://127.0.0.1:8001"), "/"),
		upstreamTimeout: 15 * time.Second,
		poolSize:        runtime.GOMAXPROCS(0),
	}
	if raw := os.Getenv("POOL_PROCESSES"); strings.TrimSpace(raw) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("POOL_PROCESSES must be an integer >= 1, got %q", raw)
		}
		cfg.poolSize = n
	}
	return cfg, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gin:", err)
		os.Exit(1)
	}
}

func run() error {
	gin.SetMode(gin.ReleaseMode)
	c, err := contract.Load()
	if err != nil {
		return err
	}
	cfg, err := configFromEnv()
	if err != nil {
		return err
	}
	a := newApp(c, cfg)
	defer a.close()
	r, err := a.router()
	if err != nil {
		return err
	}

	addr := net.JoinHostPort(env("HOST", "127.0.0.1"), env("PORT", "8000"))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "gin %s: listening on http://%s (pid %d, GOMAXPROCS %d, cpu-pool %d)\n",
		gin.Version, ln.Addr(), a.pid, runtime.GOMAXPROCS(0), cfg.poolSize)

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stop() // a second signal kills the process the default way
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Requests still running after the timeout (long sleeps) are cut off.
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
