package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"lab/go/internal/contract"
)

func getWithID(t *testing.T, h http.Handler, target, id string) int {
	t.Helper()
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	if id != "" {
		r.Header.Set(RequestIDHeader, id)
	}
	h.ServeHTTP(w, r)
	return w.Code
}

func calls(t *testing.T, h http.Handler, id string) (int, int) {
	t.Helper()
	code, body, _ := get(t, h, "/calls?id="+id)
	if code != http.StatusOK || body["id"] != id {
		t.Fatalf("/calls?id=%s: %d %v", id, code, body)
	}
	return int(body["calls"].(float64)), int(body["max_concurrent"].(float64))
}

func TestCallsConcurrentAndSequential(t *testing.T) {
	h, err := newHandler(contract.MustLoad())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 5 { // five calls at once, as /upstream?n=5 makes them
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code := getWithID(t, h, "/delay?ms=100", "fan-1"); code != 200 {
				t.Errorf("/delay: %d", code)
			}
		}()
	}
	wg.Wait()
	for range 3 { // three one after another, as /upstream-seq?n=3
		getWithID(t, h, "/delay?ms=5", "seq-1")
	}
	getWithID(t, h, "/delay?ms=5", "") // no id: counted nowhere
	if n, k := calls(t, h, "fan-1"); n != 5 || k != 5 {
		t.Errorf("fan-1: calls %d max_concurrent %d; want 5 and 5", n, k)
	}
	if n, k := calls(t, h, "seq-1"); n != 3 || k != 1 {
		t.Errorf("seq-1: calls %d max_concurrent %d; want 3 and 1", n, k)
	}
	if n, k := calls(t, h, "never-seen"); n != 0 || k != 0 {
		t.Errorf("unknown id: calls %d max_concurrent %d; want 0 and 0", n, k)
	}
}

func TestCallsRefusesBadIDs(t *testing.T) {
	h, err := newHandler(contract.MustLoad())
	if err != nil {
		t.Fatal(err)
	}
	long := fmt.Sprintf("%065d", 0)
	for _, q := range []string{"", "a_b", "a%20b", long, "x&id=y"} {
		code, body, _ := get(t, h, "/calls?id="+q)
		if code != http.StatusBadRequest || body["param"] != "id" {
			t.Errorf("/calls?id=%s: %d %v; want 400 naming id", q, code, body)
		}
	}
	if code, _, _ := get(t, h, "/calls"); code != http.StatusBadRequest {
		t.Errorf("/calls without id: %d", code)
	}
	// A bad id on /delay is served but not recorded.
	if code := getWithID(t, h, "/delay?ms=1", "bad id!"); code != 200 {
		t.Errorf("/delay with a bad id: %d", code)
	}
}

func TestRecorderKeepsTheMostRecentIDs(t *testing.T) {
	r := NewRecorder(3)
	for _, id := range []string{"a", "b", "c", "a", "d", "e"} {
		r.Start(id)()
	}
	if r.Len() != 3 {
		t.Fatalf("kept %d ids; want 3", r.Len())
	}
	for id, want := range map[string]int{"a": 0, "b": 0, "c": 1, "d": 1, "e": 1} {
		if got := r.Get(id).Calls; got != want {
			t.Errorf("%s: %d calls; want %d", id, got, want)
		}
	}
}

func TestRecorderEndsCallsEvenWhenForgotten(t *testing.T) {
	r := NewRecorder(1)
	done := r.Start("old")
	r.Start("new")() // forgets "old" while its call is in flight
	done()           // must not panic or resurrect it
	if got := r.Get("old"); got.Calls != 0 {
		t.Errorf("forgotten id still reported: %+v", got)
	}
	start := time.Now()
	for i := range 100000 { // memory stays bounded under many ids
		r.Start(fmt.Sprintf("id-%d", i))()
	}
	if r.Len() != 1 {
		t.Errorf("kept %d ids; want 1", r.Len())
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("100000 ids took %v", time.Since(start))
	}
}
