// The Go target: Gin in release mode on net/http, one process, GOMAXPROCS threads.
//
// Endpoints, parameters and bounds come from contract/openapi.json, read at start-up
// ($LAB_CONTRACT, else found by walking up from the current directory).
// Environment: HOST (127.0.0.1), PORT (8000), UPSTREAM_URL (http://127.0.0.1:8001),
// LAB_TARGET (gin), LAB_PROFILE (release), POOL_PROCESSES (/cpu-pool workers, GOMAXPROCS).
package main

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"lab/go/internal/contract"
	"lab/go/internal/serve"
)

var env = serve.Env

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

	ln, err := serve.Listen("8000")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	return serve.Run(srv, ln, func() {
		fmt.Fprintf(os.Stderr, "gin %s: listening on http://%s (pid %d, GOMAXPROCS %d, cpu-pool %d)\n",
			gin.Version, ln.Addr(), a.pid, runtime.GOMAXPROCS(0), cfg.poolSize)
	})
}
