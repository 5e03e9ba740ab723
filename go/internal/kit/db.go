package kit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"lab/go/internal/contract"
)

// The database endpoints: pgx v5's pgxpool, Go's usual PostgreSQL pool, at its own default
// size (the greater of 4 and runtime.NumCPU()) unless DB_POOL sets it. A goroutine per
// request waits on the pool: there is no event loop for a synchronous driver to block, so
// /db-blocking is the same as /db.

const (
	dbDriver       = "pgx/pgxpool"
	pgxModule      = "github.com/jackc/pgx/v5"
	pgxVersion     = "v5.12.0"      // go.mod's (a test checks it): test binaries carry no module versions
	dbURLEnv       = "DATABASE_URL" // the contract's x-lab.database url-env (checked in a test)
	dbPoolEnv      = "DB_POOL"      // x-lab.database pool-env
	connectTimeout = 2 * time.Second
	worldRows      = 10000
	worldQuery     = "SELECT id, randomnumber FROM world WHERE id = $1"
)

// database is the worker's pool, or why there is none.
type database struct {
	pool    *pgxpool.Pool // nil when err says why the endpoints answer 503
	err     error
	size    int    // the pool's MaxConns as pgxpool has it
	source  string // "default" or "DB_POOL"
	timeout time.Duration
	version string // pgx's module version
}

// openDatabase makes the pool for url without connecting (pgxpool's default MinConns 0:
// connections open on first use, so an unreachable database does not stop the server from
// starting). size > 0 sets MaxConns and MinConns alike (the contract's DB_POOL); 0 keeps
// pgxpool's default. An unset url leaves no pool; its size is still pgxpool's, read from
// the config it would use. A url pgx cannot parse is an error.
func openDatabase(url string, size int, appName string, timeout time.Duration) (*database, error) {
	d := &database{source: "default", timeout: timeout, version: pgxVersion}
	cfg, err := pgxpool.ParseConfig(url) // "" is libpq's defaults: only the size is used then
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dbURLEnv, err)
	}
	if size > 0 {
		cfg.MaxConns, cfg.MinConns = int32(size), int32(size)
		d.source = dbPoolEnv
	}
	d.size = int(cfg.MaxConns)
	if url == "" {
		d.err = errors.New(dbURLEnv + " is not set")
		return d, nil
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = appName
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// Per address tried (a name with two addresses, or a fallback host, takes longer):
		// an unreachable database answers 503 in seconds, not in pgxpool's 2 minutes.
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dbURLEnv, err)
	}
	d.pool = pool
	d.size = int(pool.Config().MaxConns)
	return d, nil
}

// status is for the start-up line: why the endpoints will answer 503, if they will.
func (d *database) status() string {
	if d.err != nil {
		return "; database: " + d.err.Error()
	}
	return ""
}

// close closes the pool; it waits for connections in use, whose queries end with their
// requests' contexts (the server cancels those at shutdown).
func (d *database) close() {
	if d.pool != nil {
		d.pool.Close()
	}
}

// withConn runs f on one pooled connection, acquired and used within the contract's
// timeout and the request's life. When either ends first, pgx's default (kept) cancels
// the query at the server with a cancel request and closes that connection; the pool
// opens a new one when needed. The error is the 503's reason.
func (d *database) withConn(ctx context.Context, f func(context.Context, *pgxpool.Conn) error) error {
	if d.pool == nil {
		return d.err
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("no pooled connection within %v", d.timeout)
		}
		return err
	}
	defer conn.Release()
	if err := f(ctx, conn); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("no answer within %v", d.timeout)
		}
		return err
	}
	return nil
}

// dbSleep is /db and /db-blocking: one query that waits ms inside the database.
func (a *App) dbSleep(ctx context.Context, e contract.Endpoint, r Request) (int, any) {
	ms := r.Values["ms"]
	err := a.db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		_, err := conn.Exec(ctx, "SELECT pg_sleep($1)", float64(ms)/1000)
		return err
	})
	if err != nil {
		return http.StatusServiceUnavailable, a.dbError(err)
	}
	return http.StatusOK, map[string]any{"endpoint": e.Name, "pid": a.Pid, "ms": ms}
}

// dbRows is /db-rows: n single-row selects, one after another on one connection.
func (a *App) dbRows(ctx context.Context, e contract.Endpoint, r Request) (int, any) {
	n, seed := r.Values["n"], r.Values["seed"]
	var checksum int64
	err := a.db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		for k := 1; k <= n; k++ {
			id := worldID(uint64(seed), uint64(k))
			var got, number int64
			// pgx's default exec mode prepares the statement on the connection's first use
			// and caches it: the other selects are one Bind/Execute round trip each.
			if err := conn.QueryRow(ctx, worldQuery, id).Scan(&got, &number); err != nil {
				return fmt.Errorf("world row %d: %w", id, err)
			}
			if got != id {
				return fmt.Errorf("asked for world row %d, got %d", id, got)
			}
			checksum += number
		}
		return nil
	})
	if err != nil {
		return http.StatusServiceUnavailable, a.dbError(err)
	}
	return http.StatusOK, map[string]any{"endpoint": e.Name, "pid": a.Pid, "n": n, "seed": seed, "checksum": checksum}
}

// dbInfo is /info's "database" object.
func (a *App) dbInfo() map[string]any {
	return map[string]any{
		"driver":          dbDriver,
		"driver_version":  a.db.version,
		"pool":            a.db.size,
		"pool_source":     a.db.source,
		"blocking_driver": dbDriver,
		"blocking_pool":   a.db.size,
		"blocking":        "same as /db",
	}
}

// splitMix64 is the contract's row picker (db-vectors.json): arithmetic mod 2^64.
func splitMix64(seed, k uint64) uint64 {
	z := seed + k*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// worldID is the id /db-rows's k-th select reads (k = 1..n).
func worldID(seed, k uint64) int64 { return int64(1 + splitMix64(seed, k)%worldRows) }
