// Package kit is everything a Go target shares that is not its router: the contract's
// endpoint logic, the /cpu-pool pool, the upstream client, /info, the error bodies and
// the process's main. A target wraps it in its router's idiom:
//
//	app.Endpoints()           // every contract endpoint with its logic, in contract order
//	req, bad := e.Bind(r)     // the query (strict grammar, 400 body) and X-Lab-Request-Id
//	status, body := e.Serve(ctx, req)
//	app.NotFound(path), app.MethodNotAllowed(method), app.InternalError()
//	kit.Main("gin", gin.Version, newRouter)
//
// Concurrency model (CONTRACT.md): a goroutine per request; /blocking holds an OS thread
// in a real blocking syscall; /cpu-pool is a fixed pool of worker goroutines; the database
// endpoints wait on pgx's pgxpool (db.go).
package kit

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"lab/go/internal/contract"
	"lab/go/internal/serve"
)

// Config is what Main reads from the environment; tests build their own.
type Config struct {
	Target, Profile             string
	Framework, FrameworkVersion string        // for /info
	UpstreamURL                 string        // base URL of the upstream service, no trailing slash
	UpstreamTimeout             time.Duration // per upstream call (http.Client.Timeout)
	PoolSize                    int           // /cpu-pool worker goroutines
	DatabaseURL                 string        // "": the database endpoints answer 503
	DBPool                      int           // connections in the pool; 0: pgxpool's default
}

// ConfigFromEnv reads LAB_TARGET, LAB_PROFILE (default: framework, release), UPSTREAM_URL
// (http://127.0.0.1:8001), POOL_PROCESSES (GOMAXPROCS), DATABASE_URL (none) and DB_POOL
// (pgxpool's default).
func ConfigFromEnv(framework, version string) (Config, error) {
	cfg := Config{
		Target:           serve.Env("LAB_TARGET", framework),
		Profile:          serve.Env("LAB_PROFILE", "release"),
		Framework:        framework,
		FrameworkVersion: version,
		UpstreamURL:      strings.TrimRight(serve.Env("UPSTREAM_URL", "http://127.0.0.1:8001"), "/"),
		UpstreamTimeout:  15 * time.Second,
		PoolSize:         runtime.GOMAXPROCS(0),
		DatabaseURL:      serve.Env(dbURLEnv, ""),
	}
	for _, knob := range []struct {
		name string
		to   *int
	}{{"POOL_PROCESSES", &cfg.PoolSize}, {dbPoolEnv, &cfg.DBPool}} {
		if raw := serve.Env(knob.name, ""); raw != "" {
			n, err := strconv.Atoi(raw)
			if err != nil || n < 1 {
				return cfg, fmt.Errorf("%s must be an integer >= 1, got %q", knob.name, raw)
			}
			*knob.to = n
		}
	}
	return cfg, nil
}

// App is one target process: its contract, configuration and shared resources.
type App struct {
	Contract *contract.Contract
	Config   Config
	Pid      int
	pool     *pool
	upstream *upstreamClient
	db       *database
	closed   sync.Once
}

// New starts the app's resources (the /cpu-pool workers, the database pool, which connects
// on first use); Close stops them. It fails on a DATABASE_URL pgx cannot parse.
func New(c *contract.Contract, cfg Config) (*App, error) {
	dbc, err := c.Database()
	if err != nil {
		return nil, err
	}
	a := &App{Contract: c, Config: cfg, Pid: os.Getpid()}
	a.db, err = openDatabase(cfg.DatabaseURL, cfg.DBPool, dbc.AppName(cfg.Target, a.Pid), dbc.Timeout)
	if err != nil {
		return nil, err
	}
	a.pool = newPool(cfg.PoolSize)
	a.upstream = newUpstreamClient(cfg.UpstreamURL, cfg.UpstreamTimeout)
	return a, nil
}

// Close stops the pool's workers, the upstream client's idle connections and the database
// pool (after the queries still running end). A second Close does nothing.
func (a *App) Close() {
	a.closed.Do(func() {
		a.pool.close()
		a.upstream.close()
		a.db.close()
	})
}

// Request is what an endpoint's logic needs from an HTTP request.
type Request struct {
	Values    contract.Values // parsed and checked, defaults filled in
	RequestID string          // X-Lab-Request-Id when valid, else ""
}

// logic is one endpoint's work: the status and the JSON body to answer.
type logic func(ctx context.Context, e contract.Endpoint, r Request) (int, any)

// Endpoint is a contract endpoint together with its logic.
type Endpoint struct {
	contract.Endpoint
	logic logic
}

// Bind reads the endpoint's parameters (the contract's grammar, bounds and cap) and the
// request id from r; a refused request gets the 400 body naming the parameter.
func (e Endpoint) Bind(r *http.Request) (Request, *contract.BadParam) {
	v, bad := e.Parse(contract.NewQuery(r.URL.RawQuery))
	if bad != nil {
		return Request{}, bad
	}
	return Request{Values: v, RequestID: contract.RequestID(r.Header.Get(contract.RequestIDHeader))}, nil
}

// Serve does the endpoint's work; ctx is the request's (it ends when the client goes away).
func (e Endpoint) Serve(ctx context.Context, r Request) (status int, body any) {
	return e.logic(ctx, e.Endpoint, r)
}

// Endpoints are the contract's endpoints, in contract order, each with its logic. It fails
// when the contract names an endpoint Go does not implement (or one that is not GET).
func (a *App) Endpoints() ([]Endpoint, error) {
	impl := map[string]logic{
		"hello": a.hello, "health": a.health, "info": a.info,
		"sync": a.sync, "async": a.async, "blocking": a.blocking, "executor": a.executor,
		"gather": a.gather, "sequential": a.sequential,
		"cpu": a.cpu, "cpu-pool": a.cpuPool,
		"upstream": a.upstreamFanOut, "upstream-seq": a.upstreamSeq,
		"db": a.dbSleep, "db-blocking": a.dbSleep, "db-rows": a.dbRows,
	}
	var out []Endpoint
	var missing []string
	for _, e := range a.Contract.Endpoints {
		if e.Method != http.MethodGet {
			return nil, fmt.Errorf("contract endpoint %s is %s; the contract serves GET only", e.Name, e.Method)
		}
		if f, ok := impl[e.Name]; ok {
			out = append(out, Endpoint{e, f})
		} else {
			missing = append(missing, e.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("contract endpoints not implemented in Go: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// Main is a target's main: it loads the contract and the environment, builds the
// router with newRouter and serves on $HOST:$PORT until SIGTERM (serve.Run). Any
// failure is one line on stderr and exit status 1.
func Main(framework, version string, newRouter func(*App) (http.Handler, error)) {
	if err := run(framework, version, newRouter); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", framework, err)
		os.Exit(1)
	}
}

func run(framework, version string, newRouter func(*App) (http.Handler, error)) error {
	c, err := contract.Load()
	if err != nil {
		return err
	}
	cfg, err := ConfigFromEnv(framework, version)
	if err != nil {
		return err
	}
	a, err := New(c, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	h, err := newRouter(a)
	if err != nil {
		return err
	}
	ln, err := serve.Listen("8000")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return serve.Run(srv, ln, func() {
		fmt.Fprintf(os.Stderr, "%s %s: listening on http://%s (pid %d, GOMAXPROCS %d, cpu-pool %d, db pool %d%s)\n",
			framework, version, ln.Addr(), a.Pid, runtime.GOMAXPROCS(0), cfg.PoolSize, a.db.size, a.db.status())
	})
}
