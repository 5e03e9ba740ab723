package kit

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lab/go/internal/contract"
	"lab/go/internal/serve"
)

var testContract = contract.MustLoad()

func testConfig(upstreamURL string) Config {
	return Config{
		Target: "t", Profile: "p", Framework: "fw", FrameworkVersion: "v1",
		UpstreamURL:     upstreamURL,
		UpstreamTimeout: 2 * time.Second,
		PoolSize:        runtime.GOMAXPROCS(0),
	}
}

func newTestApp(t *testing.T, cfg Config) *App {
	t.Helper()
	a, err := New(testContract, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// call binds target (path?query) to its endpoint and serves it the way a router does,
// with the JSON round trip a router makes.
func call(t *testing.T, a *App, target string, header http.Header) (int, map[string]any, time.Duration) {
	t.Helper()
	endpoints, err := a.Endpoints()
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for k, vs := range header {
		r.Header[k] = vs
	}
	for _, e := range endpoints {
		if e.Path != r.URL.Path {
			continue
		}
		start := time.Now()
		req, bad := e.Bind(r)
		var status int
		var body any = bad
		if bad != nil {
			status = http.StatusBadRequest
		} else {
			status, body = e.Serve(r.Context(), req)
		}
		took := time.Since(start)
		raw, _ := json.Marshal(body)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: body %s is not a JSON object", target, raw)
		}
		return status, m, took
	}
	t.Fatalf("no endpoint for %s", target)
	return 0, nil, 0
}

func TestEndpointsFollowTheContract(t *testing.T) {
	a := newTestApp(t, testConfig("http://127.0.0.1:1"))
	endpoints, err := a.Endpoints()
	if err != nil {
		t.Fatal(err)
	}
	if len(endpoints) != len(testContract.Endpoints) {
		t.Fatalf("%d endpoints; the contract has %d", len(endpoints), len(testContract.Endpoints))
	}
	for i, e := range endpoints {
		if e.Name != testContract.Endpoints[i].Name {
			t.Errorf("endpoint %d is %s; want %s (contract order)", i, e.Name, testContract.Endpoints[i].Name)
		}
	}
	for _, extra := range []contract.Endpoint{
		{Name: "bogus", Path: "/bogus", Method: "GET", Kind: "none"},
		{Name: "hello", Path: "/hello", Method: "POST", Kind: "none"},
	} {
		c := *testContract
		c.Endpoints = append(append([]contract.Endpoint(nil), c.Endpoints...), extra)
		b := newTestApp(t, testConfig("http://127.0.0.1:1"))
		b.Contract = &c
		if _, err := b.Endpoints(); err == nil {
			t.Errorf("Endpoints accepted %s %s", extra.Method, extra.Name)
		}
	}
}

func TestBadParamIsRefusedBeforeWork(t *testing.T) {
	a := newTestApp(t, testConfig("http://127.0.0.1:1"))
	for target, param := range map[string]string{
		"/sync?ms=10001": "ms", "/sequential?ms=10000&n=2": "n", "/cpu?n=007": "n", "/upstream?ms=1&ms=1": "ms",
	} {
		code, body, took := call(t, a, target, nil)
		if code != 400 || body["param"] != param || took > 50*time.Millisecond {
			t.Errorf("%s: %d %v in %v; want a quick 400 naming %s", target, code, body, took, param)
		}
	}
}

func TestDefaultsAndCPU(t *testing.T) {
	a := newTestApp(t, testConfig("http://127.0.0.1:1"))
	vectors, err := testContract.CPUVectors()
	if err != nil || len(vectors) == 0 {
		t.Fatal("no CPU vectors", err)
	}
	cpu, _ := testContract.Endpoint("cpu")
	def, _ := cpu.Param("n")
	for _, path := range []string{"/cpu", "/cpu-pool"} {
		code, body, _ := call(t, a, path, nil) // missing n: the contract's default
		if code != 200 || body["n"] != float64(def.Default) || body["endpoint"] != path[1:] {
			t.Errorf("%s: %d %v; want n=%d", path, code, body, def.Default)
		}
		for _, v := range vectors {
			code, body, _ := call(t, a, path+"?n="+strconv.Itoa(v.N), nil)
			if code != 200 || body["result"] != float64(v.Result) {
				t.Errorf("%s?n=%d: %d %v; want result %d", path, v.N, code, body, v.Result)
			}
		}
	}
}

func TestCPUPoolGivesUpWithTheClient(t *testing.T) {
	a := newTestApp(t, testConfig("http://127.0.0.1:1"))
	a.pool.close()
	a.pool = &pool{size: 1, jobs: make(chan job)} // no worker: a request waits forever
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	e, _ := testContract.Endpoint("cpu-pool")
	if code, _ := a.cpuPool(ctx, e, Request{Values: contract.Values{"n": 1}}); code != http.StatusServiceUnavailable {
		t.Errorf("cpu-pool with the client gone: %d; want 503", code)
	}
}

func TestSleeps(t *testing.T) {
	a := newTestApp(t, testConfig("http://127.0.0.1:1"))
	const ms = 50
	cases := []struct {
		path     string
		min, max time.Duration
	}{
		{"/sync?ms=50", ms, 3 * ms},
		{"/async?ms=50", ms, 3 * ms},
		{"/blocking?ms=50", ms, 3 * ms},
		{"/executor?ms=50", ms, 3 * ms},
		{"/gather?ms=50&n=4", ms, 3 * ms},
		{"/sequential?ms=50&n=4", 4 * ms, 7 * ms},
	}
	var wg sync.WaitGroup
	for _, tc := range cases {
		wg.Go(func() {
			code, body, took := call(t, a, tc.path, nil)
			if code != 200 || body["ms"] != float64(ms) || body["pid"] == nil {
				t.Errorf("%s: %d %v", tc.path, code, body)
			}
			min, max := tc.min*time.Millisecond, tc.max*time.Millisecond
			if took < min || took > max {
				t.Errorf("%s took %v; want %v..%v", tc.path, took, min, max)
			}
		})
	}
	wg.Wait()
}

// /blocking holds an OS thread per request, but the runtime hands the P off, so more
// requests than GOMAXPROCS still sleep at the same time.
func TestBlockingDoesNotBlockOthers(t *testing.T) {
	a := newTestApp(t, testConfig("http://127.0.0.1:1"))
	n := 2*runtime.GOMAXPROCS(0) + 2
	start := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { call(t, a, "/blocking?ms=100", nil) })
	}
	wg.Wait()
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("%d concurrent /blocking?ms=100 took %v: they ran one after another", n, took)
	}
}

func TestInfo(t *testing.T) {
	a := newTestApp(t, testConfig("http://127.0.0.1:1"))
	code, body, _ := call(t, a, "/info", nil)
	if code != 200 || body["endpoint"] != "info" || body["framework"] != "fw" || body["framework_version"] != "v1" ||
		body["target"] != "t" || body["profile"] != "p" || body["language"] != "go" || body["server"] != "net/http" {
		t.Fatalf("%d %v", code, body)
	}
	if body["threads"] != float64(runtime.GOMAXPROCS(0)) || body["pool_processes"] != float64(a.pool.size) ||
		body["workers"] != float64(1) || body["executor_threads"] != nil {
		t.Errorf("knobs: %v", body)
	}
	if g := body["graceful_timeout_s"]; g != serve.GracefulTimeout.Seconds() || g.(float64) > 3 {
		t.Errorf("graceful_timeout_s = %v; want serve.GracefulTimeout (%v), at most 3", g, serve.GracefulTimeout)
	}
	capacity, _ := body["capacity"].(map[string]any)
	bench := testContract.BenchEndpoints()
	if len(capacity) != len(bench) {
		t.Errorf("capacity %v; want exactly the %d bench endpoints", capacity, len(bench))
	}
	for _, e := range bench {
		v, ok := capacity[e.Name]
		switch {
		case !ok:
			t.Errorf("capacity lacks %s", e.Name)
		case e.Name == "cpu-pool":
			if v != float64(a.pool.size) {
				t.Errorf("capacity[cpu-pool] = %v; want %d", v, a.pool.size)
			}
		case e.Kind == "db": // a goroutine per request: the pool is the bound (TestDBInfo)
			if v != float64(a.db.size) {
				t.Errorf("capacity[%s] = %v; want the pool's %d", e.Name, v, a.db.size)
			}
		case v != nil:
			t.Errorf("capacity[%s] = %v; want null", e.Name, v)
		}
	}
	for _, path := range []string{"/hello", "/health"} {
		code, body, _ := call(t, a, path, nil)
		if code != 200 || body["endpoint"] != path[1:] || body["pid"] == nil {
			t.Errorf("%s: %d %v", path, code, body)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv("LAB_TARGET", "")
	t.Setenv("POOL_PROCESSES", " 3 ")
	cfg, err := ConfigFromEnv("fw", "v")
	if err != nil || cfg.Target != "fw" || cfg.PoolSize != 3 || cfg.Framework != "fw" {
		t.Errorf("%+v, %v", cfg, err)
	}
	for _, bad := range []string{"0", "x", "-1"} {
		t.Setenv("POOL_PROCESSES", bad)
		if _, err := ConfigFromEnv("fw", "v"); err == nil {
			t.Errorf("POOL_PROCESSES=%s accepted", bad)
		}
	}
	t.Setenv("POOL_PROCESSES", "")
	t.Setenv("DATABASE_URL", " postgres://u@127.0.0.1:1/db ")
	t.Setenv("DB_POOL", "")
	cfg, err = ConfigFromEnv("fw", "v")
	if err != nil || cfg.DatabaseURL != "postgres://u@127.0.0.1:1/db" || cfg.DBPool != 0 {
		t.Errorf("%+v, %v; want the URL and DBPool 0 (pgxpool's default)", cfg, err)
	}
	t.Setenv("DB_POOL", "7")
	if cfg, err := ConfigFromEnv("fw", "v"); err != nil || cfg.DBPool != 7 {
		t.Errorf("DB_POOL=7: %+v, %v", cfg, err)
	}
	for _, bad := range []string{"0", "x", "-1", "2.5"} {
		t.Setenv("DB_POOL", bad)
		if _, err := ConfigFromEnv("fw", "v"); err == nil || err.Error() != `DB_POOL must be an integer >= 1, got "`+bad+`"` {
			t.Errorf("DB_POOL=%s: %v; want the POOL_PROCESSES style of error", bad, err)
		}
	}
}

// fakeUpstream answers /delay?ms= after ms with status and counts the calls per
// X-Lab-Request-Id (the empty id: calls without the header).
type fakeUpstream struct {
	URL   string
	mu    sync.Mutex
	calls map[string]int
	peak  map[string]int
	now   map[string]*atomic.Int32
}

func newFakeUpstream(t *testing.T, status int) *fakeUpstream {
	t.Helper()
	f := &fakeUpstream{calls: map[string]int{}, peak: map[string]int{}, now: map[string]*atomic.Int32{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(contract.RequestIDHeader)
		f.mu.Lock()
		f.calls[id]++
		if f.now[id] == nil {
			f.now[id] = &atomic.Int32{}
		}
		in := f.now[id]
		f.mu.Unlock()
		n := int(in.Add(1))
		defer in.Add(-1)
		f.mu.Lock()
		f.peak[id] = max(f.peak[id], n)
		f.mu.Unlock()
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"ms":` + strconv.Itoa(ms) + `}`))
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

func (f *fakeUpstream) seen(id string) (calls, peak int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id], f.peak[id]
}

func TestUpstream(t *testing.T) {
	up := newFakeUpstream(t, 200)
	a := newTestApp(t, testConfig(up.URL))
	id := http.Header{contract.RequestIDHeader: {"fan-out-1"}}
	code, body, took := call(t, a, "/upstream?ms=50&n=5", id)
	statuses, _ := body["statuses"].([]any)
	if code != 200 || len(statuses) != 5 || statuses[0] != float64(200) || body["n"] != float64(5) {
		t.Errorf("/upstream: %d %v", code, body)
	}
	if took < 50*time.Millisecond || took > 200*time.Millisecond {
		t.Errorf("/upstream?ms=50&n=5 took %v; want about 50ms", took)
	}
	if calls, peak := up.seen("fan-out-1"); calls != 5 || peak != 5 {
		t.Errorf("upstream saw %d calls, %d at once for the id; want 5 and 5", calls, peak)
	}

	id = http.Header{contract.RequestIDHeader: {"seq-1"}}
	code, body, took = call(t, a, "/upstream-seq?ms=20&n=3", id)
	if statuses, _ := body["statuses"].([]any); code != 200 || len(statuses) != 3 {
		t.Errorf("/upstream-seq: %d %v", code, body)
	}
	if took < 60*time.Millisecond || took > 250*time.Millisecond {
		t.Errorf("/upstream-seq?ms=20&n=3 took %v; want about 60ms", took)
	}
	if calls, peak := up.seen("seq-1"); calls != 3 || peak != 1 {
		t.Errorf("upstream saw %d calls, %d at once for the id; want 3 and 1", calls, peak)
	}

	// No header, or one that is not an id: the calls carry none.
	call(t, a, "/upstream?ms=1&n=2", nil)
	call(t, a, "/upstream?ms=1&n=2", http.Header{contract.RequestIDHeader: {"not valid!"}})
	if calls, _ := up.seen(""); calls != 4 {
		t.Errorf("%d calls without an id; want 4", calls)
	}
}

func TestUpstreamErrors(t *testing.T) {
	// A closed port: connection refused, 502 at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	a := newTestApp(t, testConfig(closed))
	for _, path := range []string{"/upstream?ms=1&n=3", "/upstream-seq?ms=1&n=3"} {
		code, body, took := call(t, a, path, nil)
		if code != http.StatusBadGateway || !strings.HasPrefix(body["error"].(string), "upstream failed") || took > time.Second {
			t.Errorf("closed port %s: %d %v after %v; want a quick 502", path, code, body, took)
		}
	}

	// A non-200 upstream status: 502.
	a = newTestApp(t, testConfig(newFakeUpstream(t, 500).URL))
	for _, path := range []string{"/upstream?ms=1&n=2", "/upstream-seq?ms=1&n=2"} {
		if code, body, _ := call(t, a, path, nil); code != http.StatusBadGateway || body["error"] != "upstream answered 500" {
			t.Errorf("upstream 500 %s: %d %v; want 502", path, code, body)
		}
	}

	// Slower than the client's timeout: 504.
	cfg := testConfig(newFakeUpstream(t, 200).URL)
	cfg.UpstreamTimeout = 100 * time.Millisecond
	a = newTestApp(t, cfg)
	for _, path := range []string{"/upstream?ms=2000&n=2", "/upstream-seq?ms=2000&n=2"} {
		code, body, took := call(t, a, path, nil)
		if code != http.StatusGatewayTimeout || took > time.Second {
			t.Errorf("slow upstream %s: %d %v after %v; want a quick 504", path, code, body, took)
		}
	}
}

func TestErrorBodies(t *testing.T) {
	a := &App{Contract: testContract}
	for got, want := range map[string]string{
		mustJSON(a.NotFound("/nope")):           `{"error":"not found","path":"/nope"}`,
		mustJSON(a.MethodNotAllowed("OPTIONS")): `{"error":"method not allowed","method":"OPTIONS"}`,
		mustJSON(a.InternalError()):             `{"error":"internal error"}`,
	} {
		if got != want {
			t.Errorf("%s; want %s", got, want)
		}
	}
}

// The bodies are the contract's templates, not copies of them: change one, the body follows.
func TestErrorBodiesFollowTheTemplates(t *testing.T) {
	c := *testContract
	c.Errors = contract.Errors{}
	for kind, text := range testContract.Errors {
		c.Errors[kind] = "changed: " + text
	}
	a := &App{Contract: &c}
	for got, want := range map[string]string{
		a.NotFound("/x")["error"]:             "changed: not found",
		a.MethodNotAllowed("PUT")["error"]:    "changed: method not allowed",
		a.InternalError()["error"]:            "changed: internal error",
		a.dbError(errString("down"))["error"]: "changed: database: down",
	} {
		if got != want {
			t.Errorf("%q; want %q", got, want)
		}
	}
}

func mustJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(raw)
}
