// The upstream service the /upstream endpoints call: GET /delay?ms= answers after ms
// milliseconds. Plain net/http, a goroutine per request, no request logging, so that it
// is never the bottleneck. The bounds of ms are the contract's (the "upstream" endpoint's
// ms parameter). A call carrying X-Lab-Request-Id is counted for that id, and
// GET /calls?id= tells how many calls the id made and how many were in flight at once.
// Environment: HOST (127.0.0.1), PORT (8001), LAB_CONTRACT.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"lab/go/internal/contract"
	"lab/go/internal/serve"
)

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// newHandler serves /delay and /health; the delay endpoint takes its ms parameter
// (name, default, bounds) from the contract's "upstream" endpoint.
func newHandler(c *contract.Contract) (http.Handler, error) {
	return newHandlerWith(c, NewRecorder(maxIDs))
}

func newHandlerWith(c *contract.Contract, calls *Recorder) (http.Handler, error) {
	up, ok := c.Endpoint("upstream")
	if !ok {
		return nil, errors.New(`contract has no "upstream" endpoint`)
	}
	p, ok := up.Param("ms")
	if !ok {
		return nil, errors.New(`contract's "upstream" endpoint has no ms parameter`)
	}
	delay := contract.Endpoint{Name: "delay", Path: "/delay", Method: http.MethodGet, Params: []contract.Param{p}}
	pid := os.Getpid()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /delay", func(w http.ResponseWriter, r *http.Request) {
		v, bad := delay.Parse(contract.Query(r.URL.Query()))
		if bad != nil {
			writeJSON(w, http.StatusBadRequest, bad)
			return
		}
		if id := r.Header.Get(RequestIDHeader); id != "" {
			defer calls.Start(id)()
		}
		t := time.NewTimer(time.Duration(v["ms"]) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done(): // the caller gave up
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"ms": v["ms"]})
	})
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, r *http.Request) {
		ids := r.URL.Query()["id"]
		if len(ids) != 1 || !validID.MatchString(ids[0]) {
			writeJSON(w, http.StatusBadRequest, map[string]string{
				"error": "id must be given once, 1-64 characters of A-Z, a-z, 0-9 and -", "param": "id",
			})
			return
		}
		writeJSON(w, http.StatusOK, calls.Get(ids[0]))
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"endpoint": "health", "status": "ok", "pid": pid})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
	})
	return mux, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
}

func run() error {
	c, err := contract.Load()
	if err != nil {
		return err
	}
	h, err := newHandler(c)
	if err != nil {
		return err
	}
	ln, err := serve.Listen("8001")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return serve.Run(srv, ln, func() {
		fmt.Fprintf(os.Stderr, "upstream: listening on http://%s (pid %d)\n", ln.Addr(), os.Getpid())
	})
}
