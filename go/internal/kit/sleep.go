package kit

import (
	"context"
	"net/http"
	"sync"
	"syscall"
	"time"

	"lab/go/internal/contract"
)

func ms(r Request) time.Duration { return time.Duration(r.Values["ms"]) * time.Millisecond }

func (a *App) sleepBody(e contract.Endpoint, r Request) map[string]any {
	body := map[string]any{"endpoint": e.Name, "pid": a.Pid, "ms": r.Values["ms"]}
	if n, ok := r.Values["n"]; ok {
		body["n"] = n
	}
	return body
}

func (a *App) hello(_ context.Context, e contract.Endpoint, _ Request) (int, any) {
	return http.StatusOK, map[string]any{"endpoint": e.Name, "message": "hello, world", "pid": a.Pid}
}

func (a *App) health(_ context.Context, e contract.Endpoint, _ Request) (int, any) {
	return http.StatusOK, map[string]any{"endpoint": e.Name, "status": "ok", "pid": a.Pid}
}

// sync: a plain blocking sleep in the handler. In Go that parks only this goroutine.
func (a *App) sync(_ context.Context, e contract.Endpoint, r Request) (int, any) {
	time.Sleep(ms(r))
	return http.StatusOK, a.sleepBody(e, r)
}

// async: Go's natural non-blocking wait, a timer or the request's end, whichever comes
// first. The goroutine parks; no OS thread is held.
func (a *App) async(ctx context.Context, e contract.Endpoint, r Request) (int, any) {
	t := time.NewTimer(ms(r))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return http.StatusOK, a.sleepBody(e, r)
}

// blocking: the closest honest Go equivalent of "a blocking call in an async handler".
// Go has no event loop to block: time.Sleep only parks the goroutine. So this makes a
// raw nanosleep(2) syscall that really holds the goroutine's OS thread for ms. The
// runtime notices the thread is stuck in a syscall and hands its P to another thread,
// so other requests keep running (capacity null); the cost is one OS thread per
// request in flight (the runtime's limit is 10000 threads).
func (a *App) blocking(_ context.Context, e contract.Endpoint, r Request) (int, any) {
	blockingSleep(ms(r))
	return http.StatusOK, a.sleepBody(e, r)
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
func (a *App) executor(_ context.Context, e contract.Endpoint, r Request) (int, any) {
	done := make(chan struct{})
	go func() {
		time.Sleep(ms(r))
		close(done)
	}()
	<-done
	return http.StatusOK, a.sleepBody(e, r)
}

// gather: n sleeps of ms on n goroutines at once; answers when all are over (about ms).
func (a *App) gather(_ context.Context, e contract.Endpoint, r Request) (int, any) {
	var wg sync.WaitGroup
	for range r.Values["n"] {
		wg.Go(func() { time.Sleep(ms(r)) })
	}
	wg.Wait()
	return http.StatusOK, a.sleepBody(e, r)
}

// sequential: n sleeps of ms one after another (about n*ms).
func (a *App) sequential(_ context.Context, e contract.Endpoint, r Request) (int, any) {
	for range r.Values["n"] {
		time.Sleep(ms(r))
	}
	return http.StatusOK, a.sleepBody(e, r)
}
