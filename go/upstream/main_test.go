package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"lab/go/internal/contract"
)

func get(t *testing.T, h http.Handler, target string) (int, map[string]any, time.Duration) {
	t.Helper()
	w := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	took := time.Since(start)
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: body %q is not JSON: %v", target, w.Body.String(), err)
	}
	return w.Code, body, took
}

func TestDelay(t *testing.T) {
	h, err := newHandler(contract.MustLoad())
	if err != nil {
		t.Fatal(err)
	}
	code, body, took := get(t, h, "/delay?ms=50")
	if code != 200 || body["ms"] != float64(50) {
		t.Errorf("/delay?ms=50: %d %v", code, body)
	}
	if took < 50*time.Millisecond || took > 150*time.Millisecond {
		t.Errorf("/delay?ms=50 took %v", took)
	}
	for _, q := range []string{"abc", "-1", "999999", "1.5", ""} {
		code, body, _ := get(t, h, "/delay?ms="+q)
		if code != http.StatusBadRequest || body["param"] != "ms" {
			t.Errorf("/delay?ms=%s: %d %v; want 400 naming ms", q, code, body)
		}
	}
	if code, body, _ := get(t, h, "/health"); code != 200 || body["status"] != "ok" {
		t.Errorf("/health: %d %v", code, body)
	}
	if code, _, _ := get(t, h, "/nope"); code != http.StatusNotFound {
		t.Errorf("/nope: %d", code)
	}
}
