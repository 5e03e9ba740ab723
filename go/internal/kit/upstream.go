package kit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"lab/go/internal/contract"
)

// upstreamClient calls the upstream service's /delay with one pooled http.Client.
type upstreamClient struct {
	baseURL string
	client  *http.Client
}

func newUpstreamClient(baseURL string, timeout time.Duration) *upstreamClient {
	transport := &http.Transport{
		Proxy: nil, // the upstream is local; never go through a proxy
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		// Idle limits sized for the loads: every concurrent upstream call may keep
		// its connection for the next request instead of dialing again.
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		MaxConnsPerHost:     0, // unlimited
		IdleConnTimeout:     90 * time.Second,
	}
	return &upstreamClient{baseURL, &http.Client{Transport: transport, Timeout: timeout}}
}

func (u *upstreamClient) close() { u.client.CloseIdleConnections() }

// call makes one GET /delay?ms= carrying the request's id (if any) and returns its status.
func (u *upstreamClient) call(ctx context.Context, ms int, requestID string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.baseURL+"/delay?ms="+strconv.Itoa(ms), nil)
	if err != nil {
		return 0, err
	}
	if requestID != "" {
		req.Header.Set(contract.RequestIDHeader, requestID)
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil { // drained: the connection is reused
		return 0, err
	}
	return resp.StatusCode, nil
}

// upstreamFanOut: n concurrent calls; answers when all are back. The first failure
// cancels the rest.
func (a *App) upstreamFanOut(ctx context.Context, e contract.Endpoint, r Request) (int, any) {
	n := r.Values["n"]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	statuses := make([]int, n)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for i := range n {
		wg.Go(func() {
			status, err := a.upstream.call(ctx, r.Values["ms"], r.RequestID)
			if err != nil {
				once.Do(func() { firstErr = err; cancel() })
				return
			}
			statuses[i] = status
		})
	}
	wg.Wait()
	return a.upstreamReply(e, r, statuses, firstErr)
}

// upstreamSeq: the same n calls one after another; stops at the first failure.
func (a *App) upstreamSeq(ctx context.Context, e contract.Endpoint, r Request) (int, any) {
	statuses := make([]int, 0, r.Values["n"])
	var err error
	for range r.Values["n"] {
		var status int
		if status, err = a.upstream.call(ctx, r.Values["ms"], r.RequestID); err != nil {
			break
		}
		statuses = append(statuses, status)
		if status != http.StatusOK {
			break
		}
	}
	return a.upstreamReply(e, r, statuses, err)
}

// upstreamReply: 200 with every status, 502 for a failed call or a non-200 answer,
// 504 for a call that timed out.
func (a *App) upstreamReply(e contract.Endpoint, r Request, statuses []int, err error) (int, any) {
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return http.StatusGatewayTimeout, map[string]any{"error": "upstream timed out: " + err.Error()}
		}
		return http.StatusBadGateway, map[string]any{"error": "upstream failed: " + err.Error()}
	}
	for _, s := range statuses {
		if s != http.StatusOK {
			return http.StatusBadGateway, map[string]any{"error": fmt.Sprintf("upstream answered %d", s), "statuses": statuses}
		}
	}
	return http.StatusOK, map[string]any{"endpoint": e.Name, "pid": a.Pid, "ms": r.Values["ms"], "n": r.Values["n"], "statuses": statuses}
}
