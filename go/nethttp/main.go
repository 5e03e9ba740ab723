// The Go target on the standard library alone: http.ServeMux with Go 1.22 method patterns
// on net/http, one process, a goroutine per request. Endpoint logic, the contract's
// parameter grammar, /info and serving until SIGTERM are in lab/go/internal/kit; this
// file is how the mux routes, validates, answers JSON and handles unknown paths, other
// methods and panics.
// Environment: HOST, PORT, UPSTREAM_URL, LAB_TARGET, LAB_PROFILE, POOL_PROCESSES, DATABASE_URL,
// DB_POOL (see kit).
package main

import (
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"path"
	"runtime"
	"runtime/debug"
	"strings"

	"lab/go/internal/kit"
)

func main() {
	kit.Main("net/http", runtime.Version(), handler)
}

// handler is the mux behind recoverJSON. The mux redirects a path that is not clean
// ("//hello", "/a/../hello") to its clean form; for the contract it is an unknown path.
func handler(a *kit.App) (http.Handler, error) {
	mux, err := newMux(a)
	if err != nil {
		return nil, err
	}
	return recoverJSON(a, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; path.Clean(p) != strings.TrimSuffix(p, "/") && p != "/" {
			writeJSON(w, http.StatusNotFound, a.NotFound(p))
			return
		}
		mux.ServeHTTP(w, r)
	})), nil
}

// newMux registers every contract endpoint under "GET /path". The mux lets GET patterns
// answer HEAD and answers other methods itself with text and Allow: GET, HEAD; the
// contract wants 405 JSON with Allow: GET for every method but GET, so each path also
// gets "HEAD /path" and a method-less "/path" (less specific than GET) that say so.
func newMux(a *kit.App) (*http.ServeMux, error) {
	endpoints, err := a.Endpoints()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, a.NotFound(r.URL.Path))
	})
	for _, e := range endpoints {
		mux.HandleFunc("GET "+e.Path, handle(e))
		mux.HandleFunc("HEAD "+e.Path, methodNotAllowed(a))
		mux.HandleFunc(e.Path, methodNotAllowed(a))
	}
	return mux, nil
}

// handle parses the query with the contract's grammar (400 names the parameter), does
// the endpoint's work in this request's goroutine and answers its JSON.
func handle(e kit.Endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, bad := e.Bind(r)
		if bad != nil {
			writeJSON(w, http.StatusBadRequest, bad)
			return
		}
		status, body := e.Serve(r.Context(), req)
		writeJSON(w, status, body)
	}
}

func methodNotAllowed(a *kit.App) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", kit.Allow)
		writeJSON(w, http.StatusMethodNotAllowed, a.MethodNotAllowed(r.Method))
	}
}

// writeJSON answers body as JSON; for HEAD, net/http sends the headers only.
func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(body); err != nil {
		log.Printf("writing the answer: %v", err)
	}
}

// recoverJSON answers a handler's panic with 500 JSON (net/http alone would drop the
// connection) and logs it with its stack.
func recoverJSON(a *kit.App, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			err := recover()
			if err == nil {
				return
			}
			if e, ok := err.(error); ok && errors.Is(e, http.ErrAbortHandler) {
				panic(err) // net/http's own way to abort a response: let it do so
			}
			log.Printf("panic serving %s %s: %v\n%s", r.Method, r.URL, err, debug.Stack())
			writeJSON(w, http.StatusInternalServerError, a.InternalError())
		}()
		next.ServeHTTP(w, r)
	})
}
