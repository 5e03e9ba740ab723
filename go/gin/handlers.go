package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"

	"lab/go/internal/contract"
	"lab/go/internal/work"
)

// config is what main reads from the environment; tests build their own.
type config struct {
	target, profile string
	upstreamURL     string        // base URL of the upstream service, no trailing slash
	upstreamTimeout time.Duration // per upstream call (http.Client.Timeout)
	poolSize        int           // /cpu-pool worker goroutines
}

type app struct {
	contract *contract.Contract
	cfg      config
	pid      int
	client   *http.Client
	pool     *cpuPool
}

func newApp(c *contract.Contract, cfg config) *app {
	transport := &http.Transport{
		Proxy: nil, // the upstream is local; never go through a proxy
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		// Idle limits sized for the loads: every concurrent upstream call may keep
		// its connection for the next request instead of dialing again.
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		MaxConnsPerHost:     0, // unlimited
		IdleConnTimeout:     90 * time.Second,
	}
	return &app{
		contract: c,
		cfg:      cfg,
		pid:      os.Getpid(),
		client:   &http.Client{Transport: transport, Timeout: cfg.upstreamTimeout},
		pool:     newCPUPool(cfg.poolSize),
	}
}

func (a *app) close() {
	a.pool.close()
	a.client.CloseIdleConnections()
}

// handler serves one endpoint with its parameters already parsed and checked.
type handler func(c *gin.Context, e contract.Endpoint, v contract.Values)

// handlers maps each contract operationId to its implementation.
func (a *app) handlers() map[string]handler {
	return map[string]handler{
		"hello":        a.hello,
		"sync":         a.sync,
		"async":        a.async,
		"blocking":     a.blocking,
		"executor":     a.executor,
		"gather":       a.gather,
		"sequential":   a.sequential,
		"cpu":          a.cpu,
		"cpu-pool":     a.cpuPool,
		"upstream":     a.upstream,
		"upstream-seq": a.upstreamSeq,
		"health":       a.health,
		"info":         a.info,
	}
}

// capacity is how many requests to an endpoint run at the same time; nil when
// bounded only by connections (a goroutine per request).
func (a *app) capacity(name string) any {
	if name == "cpu-pool" {
		return a.pool.size
	}
	return nil
}

// router registers every endpoint the contract names; it fails when the contract
// names one Go does not implement. (A Go handler the contract lacks is not served.)
func (a *app) router() (*gin.Engine, error) {
	r := gin.New()
	r.Use(gin.Recovery())
	r.HandleMethodNotAllowed = true
	r.NoRoute(func(c *gin.Context) { c.JSON(http.StatusNotFound, gin.H{"error": "not found"}) })
	r.NoMethod(func(c *gin.Context) { c.JSON(http.StatusMethodNotAllowed, gin.H{"error": "method not allowed"}) })

	impl := a.handlers()
	var missing []string
	for _, e := range a.contract.Endpoints {
		h, ok := impl[e.Name]
		if !ok {
			missing = append(missing, e.Name)
			continue
		}
		r.Handle(e.Method, e.Path, bind(e, h))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("contract endpoints not implemented in Go: %s", strings.Join(missing, ", "))
	}
	return r, nil
}

// bind parses the endpoint's query parameters with the contract's bounds: 400 names
// the first bad one.
func bind(e contract.Endpoint, h handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		v, bad := e.Parse(c.GetQuery)
		if bad != nil {
			c.JSON(http.StatusBadRequest, bad)
			return
		}
		h(c, e, v)
	}
}

func ms(v contract.Values) time.Duration { return time.Duration(v["ms"]) * time.Millisecond }

func (a *app) sleepBody(e contract.Endpoint, v contract.Values) gin.H {
	body := gin.H{"endpoint": e.Name, "pid": a.pid, "ms": v["ms"]}
	if n, ok := v["n"]; ok {
		body["n"] = n
	}
	return body
}

func (a *app) hello(c *gin.Context, e contract.Endpoint, _ contract.Values) {
	c.JSON(http.StatusOK, gin.H{"endpoint": e.Name, "message": "hello, world", "pid": a.pid})
}

func (a *app) health(c *gin.Context, e contract.Endpoint, _ contract.Values) {
	c.JSON(http.StatusOK, gin.H{"endpoint": e.Name, "status": "ok", "pid": a.pid})
}

// sync: a plain blocking sleep in the handler. In Go that parks only this goroutine.
func (a *app) sync(c *gin.Context, e contract.Endpoint, v contract.Values) {
	time.Sleep(ms(v))
	c.JSON(http.StatusOK, a.sleepBody(e, v))
}

// async: Go's natural non-blocking wait, a timer or the request's end, whichever
// comes first. The goroutine parks; no OS thread is held.
func (a *app) async(c *gin.Context, e contract.Endpoint, v contract.Values) {
	t := time.NewTimer(ms(v))
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.Request.Context().Done():
	}
	c.JSON(http.StatusOK, a.sleepBody(e, v))
}

// blocking: the closest honest Go equivalent of "a blocking call in an async handler".
// Go has no event loop to block: time.Sleep only parks the goroutine. So this makes a
// raw nanosleep(2) syscall that really holds the goroutine's OS thread for ms. The
// runtime notices the thread is stuck in a syscall and hands its P to another thread,
// so other requests keep running (capacity null); the cost is one OS thread per
// request in flight (the runtime's limit is 10000 threads).
func (a *app) blocking(c *gin.Context, e contract.Endpoint, v contract.Values) {
	blockingSleep(ms(v))
	c.JSON(http.StatusOK, a.sleepBody(e, v))
}

func blockingSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		// The runtime's signals (e.g. preemption) interrupt the sleep: go on with the rest.
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}

// executor: the sleep is pushed to a separate goroutine; the handler waits for it.
func (a *app) executor(c *gin.Context, e contract.Endpoint, v contract.Values) {
	done := make(chan struct{})
	go func() {
		time.Sleep(ms(v))
		close(done)
	}()
	<-done
	c.JSON(http.StatusOK, a.sleepBody(e, v))
}

// gather: n sleeps of ms on n goroutines at once; answers when all are over (about ms).
func (a *app) gather(c *gin.Context, e contract.Endpoint, v contract.Values) {
	d := ms(v)
	var wg sync.WaitGroup
	for range v["n"] {
		wg.Go(func() { time.Sleep(d) })
	}
	wg.Wait()
	c.JSON(http.StatusOK, a.sleepBody(e, v))
}

// sequential: n sleeps of ms one after another (about n*ms).
func (a *app) sequential(c *gin.Context, e contract.Endpoint, v contract.Values) {
	d := ms(v)
	for range v["n"] {
		time.Sleep(d)
	}
	c.JSON(http.StatusOK, a.sleepBody(e, v))
}

func (a *app) cpu(c *gin.Context, e contract.Endpoint, v contract.Values) {
	n := v["n"]
	c.JSON(http.StatusOK, gin.H{"endpoint": e.Name, "pid": a.pid, "n": n, "result": work.FNV1a(n)})
}

// cpuPool: the same work on the bounded pool of worker goroutines.
func (a *app) cpuPool(c *gin.Context, e contract.Endpoint, v contract.Values) {
	n := v["n"]
	result, err := a.pool.run(c.Request.Context(), n)
	if err != nil { // the client went away while waiting for a worker
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": err.Error()})
		return
	}
	c.JSON(http.StatusOK, gin.H{"endpoint": e.Name, "pid": a.pid, "n": n, "result": result})
}

// cpuPool is a fixed set of worker goroutines fed by one channel, made at startup.
type cpuPool struct {
	size int
	jobs chan cpuJob
}

type cpuJob struct {
	n   int
	out chan<- uint32
}

func newCPUPool(size int) *cpuPool {
	p := &cpuPool{size: size, jobs: make(chan cpuJob)}
	for range size {
		go func() {
			for j := range p.jobs {
				j.out <- work.FNV1a(j.n)
			}
		}()
	}
	return p
}

func (p *cpuPool) run(ctx context.Context, n int) (uint32, error) {
	out := make(chan uint32, 1) // buffered: a worker never waits for the handler
	select {
	case p.jobs <- cpuJob{n, out}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return <-out, nil
}

func (p *cpuPool) close() { close(p.jobs) }

// upstreamError is an upstream call that failed: 502, or 504 on a timeout.
type upstreamError struct {
	status int
	msg    string
}

func classify(err error) *upstreamError {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &upstreamError{http.StatusGatewayTimeout, "upstream timed out: " + err.Error()}
	}
	return &upstreamError{http.StatusBadGateway, "upstream failed: " + err.Error()}
}

// call makes one GET /delay?ms= to the upstream and returns its status.
func (a *app) call(ctx context.Context, ms int) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.upstreamURL+"/delay?ms="+strconv.Itoa(ms), nil)
	if err != nil {
		return 0, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil { // drained: the connection is reused
		return 0, err
	}
	return resp.StatusCode, nil
}

// upstream: n concurrent calls; answers when all are back. The first failure cancels the rest.
func (a *app) upstream(c *gin.Context, e contract.Endpoint, v contract.Values) {
	n := v["n"]
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	statuses := make([]int, n)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for i := range n {
		wg.Go(func() {
			status, err := a.call(ctx, v["ms"])
			if err != nil {
				once.Do(func() { firstErr = err; cancel() })
				return
			}
			statuses[i] = status
		})
	}
	wg.Wait()
	a.upstreamReply(c, e, v, statuses, firstErr)
}

// upstreamSeq: the same n calls one after another; stops at the first failure.
func (a *app) upstreamSeq(c *gin.Context, e contract.Endpoint, v contract.Values) {
	ctx := c.Request.Context()
	statuses := make([]int, 0, v["n"])
	var err error
	for range v["n"] {
		var status int
		if status, err = a.call(ctx, v["ms"]); err != nil {
			break
		}
		statuses = append(statuses, status)
		if status != http.StatusOK {
			break
		}
	}
	a.upstreamReply(c, e, v, statuses, err)
}

func (a *app) upstreamReply(c *gin.Context, e contract.Endpoint, v contract.Values, statuses []int, err error) {
	if err != nil {
		ue := classify(err)
		c.JSON(ue.status, gin.H{"error": ue.msg})
		return
	}
	for _, s := range statuses {
		if s != http.StatusOK {
			c.JSON(http.StatusBadGateway, gin.H{"error": fmt.Sprintf("upstream answered %d", s), "statuses": statuses})
			return
		}
	}
	c.JSON(http.StatusOK, gin.H{"endpoint": e.Name, "pid": a.pid, "ms": v["ms"], "n": v["n"], "statuses": statuses})
}

func (a *app) info(c *gin.Context, e contract.Endpoint, _ contract.Values) {
	capacity := gin.H{}
	for _, b := range a.contract.BenchEndpoints() {
		capacity[b.Name] = a.capacity(b.Name)
	}
	c.JSON(http.StatusOK, gin.H{
		"endpoint":          e.Name,
		"pid":               a.pid,
		"target":            a.cfg.target,
		"profile":           a.cfg.profile,
		"framework":         "gin",
		"framework_version": gin.Version,
		"server":            "net/http",
		"server_version":    runtime.Version(),
		"language":          "go",
		"language_version":  runtime.Version(),
		"workers":           1,
		"threads":           runtime.GOMAXPROCS(0),
		"executor_threads":  nil,
		"pool_processes":    a.pool.size,
		"cpus":              runtime.NumCPU(),
		"capacity":          capacity,
	})
}
