package main

import (
	"regexp"
	"sync"
)

// RequestIDHeader carries a target's request id onto every upstream call that request
// makes, so that the suite can ask the upstream how many calls it made and how they
// overlapped (contract: "Upstream calls are verifiable at the upstream").
const RequestIDHeader = "X-Lab-Request-Id"

// maxIDs bounds the recorder's memory: the most recent ids are kept, the oldest forgotten.
const maxIDs = 10000

var validID = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// Tally is what the upstream saw of one request id.
type Tally struct {
	ID            string `json:"id"`
	Calls         int    `json:"calls"`
	MaxConcurrent int    `json:"max_concurrent"`
}

type entry struct {
	calls, inFlight, maxInFlight int
}

// Recorder counts calls and their overlap per request id, for the most recent limit ids.
// A mutex is enough: calls without an id never touch it, and the suite's calls are few.
type Recorder struct {
	mu    sync.Mutex
	limit int
	byID  map[string]*entry
	order []string // ids in the order first seen, a ring of at most limit
	next  int      // where the next new id goes in order once it is full
}

// NewRecorder keeps the most recent limit ids.
func NewRecorder(limit int) *Recorder {
	return &Recorder{limit: limit, byID: make(map[string]*entry, limit)}
}

// Start records the start of a call for id and returns the function that ends it.
// An id outside the contract's grammar is not recorded.
func (r *Recorder) Start(id string) (done func()) {
	if !validID.MatchString(id) {
		return func() {}
	}
	r.mu.Lock()
	e, ok := r.byID[id]
	if !ok {
		e = &entry{}
		r.remember(id, e)
	}
	e.calls++
	e.inFlight++
	e.maxInFlight = max(e.maxInFlight, e.inFlight)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		e.inFlight-- // e may have been forgotten meanwhile; then this changes nothing visible
		r.mu.Unlock()
	}
}

// remember adds a new id, forgetting the oldest once limit ids are kept. Call with mu held.
func (r *Recorder) remember(id string, e *entry) {
	if len(r.order) < r.limit {
		r.order = append(r.order, id)
	} else {
		delete(r.byID, r.order[r.next])
		r.order[r.next] = id
		r.next = (r.next + 1) % r.limit
	}
	r.byID[id] = e
}

// Get returns what was recorded for id: zeros for an id never seen (or forgotten).
func (r *Recorder) Get(id string) Tally {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := Tally{ID: id}
	if e, ok := r.byID[id]; ok {
		t.Calls, t.MaxConcurrent = e.calls, e.maxInFlight
	}
	return t
}

// Len is the number of ids kept.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}
