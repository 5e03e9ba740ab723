package kit

import (
	"context"
	"net/http"
	"runtime"

	"lab/go/internal/contract"
	"lab/go/internal/serve"
)

// capacity is how many requests to an endpoint run at the same time; nil when bounded
// only by connections (a goroutine per request, whatever the endpoint does).
func (a *App) capacity(name string) any {
	switch name {
	case "cpu-pool":
		return a.pool.size
	case "db", "db-blocking", "db-rows": // a goroutine per request, each holding a connection
		return a.db.size
	}
	return nil
}

// info describes the running process from its live configuration.
func (a *App) info(_ context.Context, e contract.Endpoint, _ Request) (int, any) {
	capacity := map[string]any{}
	for _, b := range a.Contract.BenchEndpoints() {
		capacity[b.Name] = a.capacity(b.Name)
	}
	return http.StatusOK, map[string]any{
		"endpoint":           e.Name,
		"pid":                a.Pid,
		"target":             a.Config.Target,
		"profile":            a.Config.Profile,
		"framework":          a.Config.Framework,
		"framework_version":  a.Config.FrameworkVersion,
		"server":             "net/http",
		"server_version":     runtime.Version(),
		"language":           "go",
		"language_version":   runtime.Version(),
		"workers":            1,
		"threads":            runtime.GOMAXPROCS(0),
		"executor_threads":   nil,
		"pool_processes":     a.pool.size,
		"cpus":               runtime.NumCPU(),
		"capacity":           capacity,
		"database":           a.dbInfo(),
		"graceful_timeout_s": serve.GracefulTimeout.Seconds(),
	}
}
