package kit

import (
	"context"
	"net/http"

	"lab/go/internal/contract"
	"lab/go/internal/work"
)

// cpu: FNV-1a inline in the request's goroutine.
func (a *App) cpu(_ context.Context, e contract.Endpoint, r Request) (int, any) {
	n := r.Values["n"]
	return http.StatusOK, map[string]any{"endpoint": e.Name, "pid": a.Pid, "n": n, "result": work.FNV1a(n)}
}

// cpuPool: the same work on the bounded pool of worker goroutines.
func (a *App) cpuPool(ctx context.Context, e contract.Endpoint, r Request) (int, any) {
	n := r.Values["n"]
	result, err := a.pool.run(ctx, n)
	if err != nil { // the client went away while waiting for a worker
		return http.StatusServiceUnavailable, map[string]any{"error": err.Error()}
	}
	return http.StatusOK, map[string]any{"endpoint": e.Name, "pid": a.Pid, "n": n, "result": result}
}

// pool is a fixed set of worker goroutines fed by one channel, made at start-up.
type pool struct {
	size int
	jobs chan job
}

type job struct {
	n   int
	out chan<- uint32
}

func newPool(size int) *pool {
	p := &pool{size: size, jobs: make(chan job)}
	for range size {
		go func() {
			for j := range p.jobs {
				j.out <- work.FNV1a(j.n)
			}
		}()
	}
	return p
}

// run waits for a free worker (or the request's end) and returns its result.
func (p *pool) run(ctx context.Context, n int) (uint32, error) {
	out := make(chan uint32, 1) // buffered: a worker never waits for the handler
	select {
	case p.jobs <- job{n, out}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return <-out, nil
}

func (p *pool) close() { close(p.jobs) }
