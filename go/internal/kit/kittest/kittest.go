// Package kittest checks a Go target's router against the strict contract over a real
// HTTP server (httptest.Server), so that what net/http does to HEAD is part of the check:
// every endpoint routed, the integer grammar's edge cases, repeated parameters, the
// total-wait cap, 405 for every other method, JSON 404 and JSON 500. A target's test
// calls Router with the function its main gives kit.Main.
package kittest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"lab/go/internal/contract"
	"lab/go/internal/kit"
)

// NewApp is a kit.App on the contract whose upstream is unreachable and which has no
// database (DATABASE_URL unset), closed with the test.
func NewApp(t *testing.T) *kit.App {
	t.Helper()
	a, err := kit.New(contract.MustLoad(), kit.Config{
		Target: "test", Profile: "test", Framework: "test",
		UpstreamURL: "http://127.0.0.1:1", UpstreamTimeout: time.Second, PoolSize: runtime.GOMAXPROCS(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// NewServer serves h over real HTTP on loopback until the test ends.
func NewServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// Reply is one answer: status, headers and the raw body.
type Reply struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends one request and reads the whole answer.
func Do(t *testing.T, srv *httptest.Server, method, target string) Reply {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Reply{resp.StatusCode, resp.Header, string(body)}
}

// ExpectJSON fails unless the reply has status and a JSON body equal to want.
func ExpectJSON(t *testing.T, what string, r Reply, status int, want map[string]any) {
	t.Helper()
	var got map[string]any
	err := json.Unmarshal([]byte(r.Body), &got)
	ok := err == nil && r.Status == status && strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
	for k, v := range want {
		ok = ok && got[k] == v
	}
	if !ok || (want != nil && len(got) != len(want)) {
		t.Errorf("%s: %d %s %q; want %d JSON %v", what, r.Status, r.Header.Get("Content-Type"), r.Body, status, want)
	}
}

const grammar = " must be an integer without sign or leading zeros"

// BadQueries are the spec's edge cases: query → the 400 body (param, message).
var BadQueries = []struct{ Target, Param, Error string }{
	{"/sync?ms=", "ms", "ms" + grammar},
	{"/sync?ms=1.0", "ms", "ms" + grammar},
	{"/sync?ms=1_0", "ms", "ms" + grammar},
	{"/sync?ms=+5", "ms", "ms" + grammar},
	{"/sync?ms=%2B5", "ms", "ms" + grammar},
	{"/sync?ms=%205", "ms", "ms" + grammar},
	{"/sync?ms=007", "ms", "ms" + grammar},
	{"/sync?ms=-1", "ms", "ms" + grammar},
	{"/sync?ms=abc", "ms", "ms" + grammar},
	{"/sync?ms=1e3", "ms", "ms" + grammar},
	{"/sync?ms=%D9%A3", "ms", "ms" + grammar}, // ٣, an Arabic-Indic digit
	{"/sync?ms=%zz", "ms", "ms" + grammar},
	{"/sync?ms=99999999999999999999", "ms", "ms" + grammar},
	{"/sync?ms=10001", "ms", "ms must be between 0 and 10000"},
	{"/gather?ms=1&n=0", "n", "n must be between 1 and 100"},
	{"/sync?ms=1&ms=2", "ms", "ms must be given once"},
	{"/sync?ms=1&ms=1", "ms", "ms must be given once"},
	{"/gather?n=x&ms=x", "ms", "ms" + grammar},
	{"/sequential?ms=10000&n=2", "n", "n * ms must be at most 10000"},
	{"/upstream-seq?ms=5000&n=3", "n", "n * ms must be at most 10000"},
	{"/cpu-pool?n=20000001", "n", "n must be between 0 and 20000000"},
	{"/db?ms=10001", "ms", "ms must be between 0 and 10000"},
	{"/db-blocking?ms=01", "ms", "ms" + grammar},
	{"/db-rows?n=0", "n", "n must be between 1 and 500"},
	{"/db-rows?n=501", "n", "n must be between 1 and 500"},
	{"/db-rows?seed=1000000000", "seed", "seed" + grammar},
	{"/db-rows?seed=-1", "seed", "seed" + grammar},
	{"/db-rows?n=5&seed=1&seed=2", "seed", "seed must be given once"},
}

// Methods are the methods a contract path refuses (the contract serves GET only).
var Methods = []string{"HEAD", "OPTIONS", "POST", "PUT", "DELETE", "PATCH", "TRACE", "LAB"}

// Router runs every check against newRouter's handler.
func Router(t *testing.T, newRouter func(*kit.App) (http.Handler, error)) {
	h, err := newRouter(NewApp(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(t, h)
	c := contract.MustLoad()
	t.Run("every endpoint", func(t *testing.T) {
		for _, e := range c.Endpoints {
			want, wantError := http.StatusOK, ""
			switch e.Kind {
			case "upstream":
				want = http.StatusBadGateway // routed, and the unreachable upstream is a 502
			case "db":
				want, wantError = http.StatusServiceUnavailable, "database: DATABASE_URL is not set"
			}
			target := e.Path + "?ms=1&n=1&unknown=x"
			r := Do(t, srv, "GET", target)
			var body map[string]any
			if r.Status != want || json.Unmarshal([]byte(r.Body), &body) != nil ||
				(want == http.StatusOK && body["endpoint"] != e.Name) ||
				(wantError != "" && body["error"] != wantError) {
				t.Errorf("GET %s: %d %q; want %d JSON", target, r.Status, r.Body, want)
			}
		}
	})
	t.Run("bad queries", func(t *testing.T) {
		for _, b := range BadQueries {
			ExpectJSON(t, b.Target, Do(t, srv, "GET", b.Target), http.StatusBadRequest,
				map[string]any{"error": b.Error, "param": b.Param})
		}
	})
	t.Run("other methods", func(t *testing.T) {
		for _, e := range c.Endpoints {
			for _, m := range Methods {
				r := Do(t, srv, m, e.Path+"?ms=abc")
				if allow := r.Header.Get("Allow"); allow != kit.Allow {
					t.Errorf("%s %s: Allow %q; want %q", m, e.Path, allow, kit.Allow)
				}
				if m == "HEAD" { // headers only
					if r.Status != http.StatusMethodNotAllowed || r.Body != "" {
						t.Errorf("HEAD %s: %d %q; want 405 and no body", e.Path, r.Status, r.Body)
					}
					continue
				}
				ExpectJSON(t, m+" "+e.Path, r, http.StatusMethodNotAllowed,
					map[string]any{"error": "method not allowed", "method": m})
			}
		}
	})
	t.Run("unknown paths", func(t *testing.T) {
		for _, path := range []string{"/nope", "/", "/hello/", "/hello/x", "/HELLO", "/info.json", "//hello", "/a/../hello", "/hello/.", "/hello%2F"} {
			decoded, _ := url.PathUnescape(path) // the body names the decoded path
			for _, m := range []string{"GET", "POST", "OPTIONS"} {
				ExpectJSON(t, m+" "+path, Do(t, srv, m, path), http.StatusNotFound,
					map[string]any{"error": "not found", "path": decoded})
			}
		}
	})
}

// Panics checks that a handler's panic at path answers 500 JSON and the server goes on.
func Panics(t *testing.T, h http.Handler, path string) {
	srv := NewServer(t, h)
	ExpectJSON(t, "panic", Do(t, srv, "GET", path), http.StatusInternalServerError,
		map[string]any{"error": "internal error"})
	ExpectJSON(t, "after the panic", Do(t, srv, "GET", "/health"), http.StatusOK, nil)
}
