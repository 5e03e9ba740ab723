package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"lab/go/internal/contract"
)

func init() { gin.SetMode(gin.ReleaseMode) }

var testContract = contract.MustLoad()

func testConfig(upstreamURL string) config {
	return config{
		target: "gin", profile: "release",
		upstreamURL:     upstreamURL,
		upstreamTimeout: 2 * time.Second,
		poolSize:        runtime.GOMAXPROCS(0),
	}
}

func newTestRouter(t *testing.T, cfg config) (*app, *gin.Engine) {
	t.Helper()
	a := newApp(testContract, cfg)
	t.Cleanup(a.close)
	r, err := a.router()
	if err != nil {
		t.Fatal(err)
	}
	return a, r
}

// get serves one request and decodes the JSON body.
func get(t *testing.T, r http.Handler, target string) (int, map[string]any, time.Duration) {
	t.Helper()
	w := httptest.NewRecorder()
	start := time.Now()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	took := time.Since(start)
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: body %q is not JSON: %v", target, w.Body.String(), err)
	}
	return w.Code, body, took
}

func cpuVector(t *testing.T, n int) uint32 {
	t.Helper()
	vectors, err := testContract.CPUVectors()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vectors {
		if v.N == n {
			return v.Result
		}
	}
	t.Fatalf("no vector for n=%d", n)
	return 0
}

func TestEveryContractEndpointRegistered(t *testing.T) {
	_, r := newTestRouter(t, testConfig("http://127.0.0.1:1"))
	routes := map[string]bool{}
	for _, ri := range r.Routes() {
		routes[ri.Method+" "+ri.Path] = true
	}
	for _, e := range testContract.Endpoints {
		if !routes[e.Method+" "+e.Path] {
			t.Errorf("%s %s (%s) not registered", e.Method, e.Path, e.Name)
		}
	}
}

func TestRouterFailsOnUnimplementedEndpoint(t *testing.T) {
	c := *testContract
	c.Endpoints = append(append([]contract.Endpoint(nil), c.Endpoints...),
		contract.Endpoint{Name: "bogus", Path: "/bogus", Method: "GET", Kind: "none"})
	a := newApp(&c, testConfig("http://127.0.0.1:1"))
	defer a.close()
	if _, err := a.router(); err == nil {
		t.Fatal("router accepted an endpoint Go does not implement")
	}
}

func TestBadParams(t *testing.T) {
	_, r := newTestRouter(t, testConfig("http://127.0.0.1:1"))
	cases := []struct{ target, param string }{
		{"/sync?ms=abc", "ms"},
		{"/async?ms=-1", "ms"},
		{"/blocking?ms=999999", "ms"},
		{"/executor?ms=1.5", "ms"},
		{"/sync?ms=", "ms"},
		{"/gather?ms=1&n=0", "n"},
		{"/sequential?ms=1&n=999999", "n"},
		{"/cpu?n=abc", "n"},
		{"/cpu-pool?n=-1", "n"},
		{"/upstream?ms=1&n=0", "n"},
		{"/upstream-seq?ms=x", "ms"},
	}
	for _, tc := range cases {
		code, body, _ := get(t, r, tc.target)
		if code != http.StatusBadRequest || body["param"] != tc.param || body["error"] == "" {
			t.Errorf("%s: %d %v; want 400 naming %s", tc.target, code, body, tc.param)
		}
	}
}

func TestDefaultsAndCPU(t *testing.T) {
	_, r := newTestRouter(t, testConfig("http://127.0.0.1:1"))
	cpu, _ := testContract.Endpoint("cpu")
	def, _ := cpu.Param("n")
	for _, path := range []string{"/cpu", "/cpu-pool"} {
		// missing n: the contract's default
		code, body, _ := get(t, r, path)
		if code != 200 || body["n"] != float64(def.Default) {
			t.Errorf("%s: %d %v; want n=%d", path, code, body, def.Default)
		}
		code, body, _ = get(t, r, path+"?n=1000")
		if code != 200 || body["result"] != float64(cpuVector(t, 1000)) || body["endpoint"] != path[1:] {
			t.Errorf("%s?n=1000: %d %v", path, code, body)
		}
	}
}

func TestSleeps(t *testing.T) {
	_, r := newTestRouter(t, testConfig("http://127.0.0.1:1"))
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
			code, body, took := get(t, r, tc.path)
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
	_, r := newTestRouter(t, testConfig("http://127.0.0.1:1"))
	n := 2*runtime.GOMAXPROCS(0) + 2
	start := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { get(t, r, "/blocking?ms=100") })
	}
	wg.Wait()
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("%d concurrent /blocking?ms=100 took %v: they ran one after another", n, took)
	}
}

func TestInfo(t *testing.T) {
	a, r := newTestRouter(t, testConfig("http://127.0.0.1:1"))
	code, body, _ := get(t, r, "/info")
	if code != 200 || body["endpoint"] != "info" || body["framework"] != "gin" || body["language"] != "go" {
		t.Fatalf("%d %v", code, body)
	}
	if body["threads"] != float64(runtime.GOMAXPROCS(0)) || body["pool_processes"] != float64(a.pool.size) ||
		body["workers"] != float64(1) || body["executor_threads"] != nil {
		t.Errorf("knobs: %v", body)
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
		case e.Name == "cpu-pool" && v != float64(a.pool.size):
			t.Errorf("capacity[cpu-pool] = %v; want %d", v, a.pool.size)
		case e.Name != "cpu-pool" && v != nil:
			t.Errorf("capacity[%s] = %v; want null", e.Name, v)
		}
	}
	for _, path := range []string{"/hello", "/health"} {
		code, body, _ := get(t, r, path)
		if code != 200 || body["endpoint"] != path[1:] || body["pid"] == nil {
			t.Errorf("%s: %d %v", path, code, body)
		}
	}
}

func TestNotFound(t *testing.T) {
	_, r := newTestRouter(t, testConfig("http://127.0.0.1:1"))
	if code, body, _ := get(t, r, "/nope"); code != 404 || body["error"] != "not found" {
		t.Errorf("/nope: %d %v", code, body)
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/hello", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /hello: %d %s", w.Code, w.Body)
	}
}

// fakeUpstream answers /delay?ms= after ms with status.
func fakeUpstream(t *testing.T, status int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	return srv.URL
}

func TestUpstream(t *testing.T) {
	_, r := newTestRouter(t, testConfig(fakeUpstream(t, 200)))
	code, body, took := get(t, r, "/upstream?ms=50&n=5")
	statuses, _ := body["statuses"].([]any)
	if code != 200 || len(statuses) != 5 || statuses[0] != float64(200) || body["n"] != float64(5) {
		t.Errorf("/upstream: %d %v", code, body)
	}
	if took < 50*time.Millisecond || took > 200*time.Millisecond {
		t.Errorf("/upstream?ms=50&n=5 took %v; want about 50ms", took)
	}
	code, body, took = get(t, r, "/upstream-seq?ms=20&n=3")
	if statuses, _ := body["statuses"].([]any); code != 200 || len(statuses) != 3 {
		t.Errorf("/upstream-seq: %d %v", code, body)
	}
	if took < 60*time.Millisecond || took > 250*time.Millisecond {
		t.Errorf("/upstream-seq?ms=20&n=3 took %v; want about 60ms", took)
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
	_, r := newTestRouter(t, testConfig(closed))
	for _, path := range []string{"/upstream?ms=1&n=3", "/upstream-seq?ms=1&n=3"} {
		code, body, took := get(t, r, path)
		if code != http.StatusBadGateway || body["error"] == nil || took > time.Second {
			t.Errorf("closed port %s: %d %v after %v; want a quick 502", path, code, body, took)
		}
	}

	// A non-200 upstream status: 502.
	_, r = newTestRouter(t, testConfig(fakeUpstream(t, 500)))
	if code, body, _ := get(t, r, "/upstream?ms=1&n=2"); code != http.StatusBadGateway {
		t.Errorf("upstream 500: %d %v; want 502", code, body)
	}

	// Slower than the client's timeout: 504.
	cfg := testConfig(fakeUpstream(t, 200))
	cfg.upstreamTimeout = 100 * time.Millisecond
	_, r = newTestRouter(t, cfg)
	code, body, took := get(t, r, "/upstream?ms=2000&n=2")
	if code != http.StatusGatewayTimeout || took > time.Second {
		t.Errorf("slow upstream: %d %v after %v; want a quick 504", code, body, took)
	}
}
