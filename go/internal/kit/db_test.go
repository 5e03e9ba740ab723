package kit

import (
	"context"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"lab/go/internal/contract"
	"lab/go/internal/serve"
)

// The reference SplitMix64's first output from state 0 (Vigna's splitmix64.c): our
// splitMix64(0, 1) is that same step.
func TestSplitMix64(t *testing.T) {
	if got := splitMix64(0, 1); got != 0xE220A8397B1DCDAF {
		t.Errorf("splitMix64(0, 1) = %#x; want 0xe220a8397b1dcdaf", got)
	}
}

// worldNumber is the world table's randomnumber for id (CONTRACT.md, 'The database').
func worldNumber(id int64) int64 { return int64(1 + splitMix64(20, uint64(id))%worldRows) }

// The vectors' ids come from worldID, and their checksums from worldID and the world
// table's own formula: the arithmetic /db-rows does, without a database.
func TestDBRowsVectors(t *testing.T) {
	vectors, err := testContract.DBVectors()
	if err != nil || len(vectors) == 0 {
		t.Fatal("no db vectors", err)
	}
	for _, v := range vectors {
		var sum int64
		for k := 1; k <= v.N; k++ {
			id := worldID(v.Seed, uint64(k))
			if id < 1 || id > worldRows {
				t.Fatalf("seed %d, k %d: id %d outside the world table", v.Seed, k, id)
			}
			if k <= len(v.IDs) && id != v.IDs[k-1] {
				t.Errorf("seed %d, k %d: id %d; want %d", v.Seed, k, id, v.IDs[k-1])
			}
			sum += worldNumber(id)
		}
		if sum != v.Checksum {
			t.Errorf("n %d, seed %d: checksum %d; want %d", v.N, v.Seed, sum, v.Checksum)
		}
	}
}

// The names the kit reads and the error it answers are the contract's.
func TestDBFollowsTheContract(t *testing.T) {
	d, err := testContract.Database()
	if err != nil {
		t.Fatal(err)
	}
	if d.URLEnv != dbURLEnv || d.PoolEnv != dbPoolEnv {
		t.Errorf("contract: %s, %s; kit reads %s, %s", d.URLEnv, d.PoolEnv, dbURLEnv, dbPoolEnv)
	}
	errs, _ := testContract.Ext["errors"].(map[string]any)
	want := strings.Replace(errs["database"].(string), "{reason}", "x", 1)
	a := &App{Contract: testContract}
	if got := a.dbError(errString("x"))["error"]; got != want {
		t.Errorf("dbError: %q; want %q", got, want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// /info's driver_version is the pgx that go.mod requires.
func TestDriverVersionIsGoMods(t *testing.T) {
	raw, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(pgxModule) + `\s+(v\S+)`).FindSubmatch(raw)
	if m == nil {
		t.Fatalf("go.mod does not require %s", pgxModule)
	}
	a := newTestApp(t, testConfig("http://127.0.0.1:1"))
	if got := a.dbInfo()["driver_version"]; got != string(m[1]) {
		t.Errorf("driver_version %v; go.mod requires %s", got, m[1])
	}
}

// Without DATABASE_URL the server serves; the database endpoints answer 503 at once, and
// /info gives pgxpool's default size (the greater of 4 and NumCPU) for each of them.
func TestDBUnset(t *testing.T) {
	a := newTestApp(t, testConfig("http://127.0.0.1:1"))
	for _, path := range []string{"/db?ms=10", "/db-blocking?ms=10", "/db-rows?n=5"} {
		code, body, took := call(t, a, path, nil)
		if code != 503 || body["error"] != "database: DATABASE_URL is not set" || took > 50*time.Millisecond {
			t.Errorf("%s: %d %v in %v; want a quick 503", path, code, body, took)
		}
	}
	code, body, _ := call(t, a, "/info", nil)
	db, _ := body["database"].(map[string]any)
	pool := float64(max(4, runtime.NumCPU()))
	if code != 200 || db["driver"] != "pgx/pgxpool" || db["blocking_driver"] != "pgx/pgxpool" ||
		db["pool"] != pool || db["blocking_pool"] != pool || db["pool_source"] != "default" ||
		db["blocking"] != "same as /db" || db["driver_version"] != pgxVersion {
		t.Errorf("/info database: %v; want pgxpool's default pool %v", db, pool)
	}
	capacity, _ := body["capacity"].(map[string]any)
	for _, name := range []string{"db", "db-blocking", "db-rows"} {
		if capacity[name] != pool {
			t.Errorf("capacity[%s] = %v; want %v", name, capacity[name], pool)
		}
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// An unreachable database: the server starts (the pool connects on first use), and the
// endpoints answer 503 quickly. DB_POOL's size is the pool's, and each connection is named.
func TestDBUnreachable(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:1")
	cfg.DatabaseURL = "postgres://lab@" + closedPort(t) + "/lab"
	cfg.DBPool = 3
	a := newTestApp(t, cfg)
	for _, path := range []string{"/db?ms=10", "/db-blocking?ms=10", "/db-rows?n=5"} {
		code, body, took := call(t, a, path, nil)
		reason, _ := body["error"].(string)
		if code != 503 || !strings.HasPrefix(reason, "database: failed to connect") || strings.ContainsAny(reason, "\n\t") ||
			took > 3*time.Second {
			t.Errorf("%s: %d %v in %v; want a quick 503", path, code, body, took)
		}
	}
	_, body, _ := call(t, a, "/info", nil)
	db, _ := body["database"].(map[string]any)
	if db["pool"] != float64(3) || db["pool_source"] != "DB_POOL" || body["capacity"].(map[string]any)["db"] != float64(3) {
		t.Errorf("/info with DB_POOL=3: %v", body)
	}
	pc := a.db.pool.Config()
	if pc.MinConns != 3 || pc.MaxConns != 3 {
		t.Errorf("pool min %d, max %d; want DB_POOL for both", pc.MinConns, pc.MaxConns)
	}
	if name, want := pc.ConnConfig.RuntimeParams["application_name"], "lab t "+strconv.Itoa(os.Getpid()); name != want {
		t.Errorf("application_name %q; want %q", name, want)
	}
}

// A server that takes the connection and never answers: 503 after the connect timeout,
// not pgxpool's own 2 minutes.
func TestDBUnresponsive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // never accepts: the kernel's backlog does
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := testConfig("http://127.0.0.1:1")
	cfg.DatabaseURL = "postgres://lab@" + ln.Addr().String() + "/lab"
	a := newTestApp(t, cfg)
	code, body, took := call(t, a, "/db?ms=1", nil)
	if code != 503 || took < connectTimeout || took > connectTimeout+time.Second {
		t.Errorf("/db: %d %v after %v; want 503 after about %v", code, body, took, connectTimeout)
	}
}

func TestDBBadURL(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:1")
	cfg.DatabaseURL = "postgres://lab@127.0.0.1:notaport/lab"
	if a, err := New(testContract, cfg); err == nil {
		a.Close()
		t.Fatal("a DATABASE_URL pgx cannot parse accepted")
	}
}

// --- against a real database: DATABASE_URL set (python -m lab.proc.database) -------------

// dbApp is an App on $DATABASE_URL with a pool of size, or the test is skipped.
func dbApp(t *testing.T, size int) (*App, string) {
	t.Helper()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		t.Skip("DATABASE_URL is not set")
	}
	cfg := testConfig("http://127.0.0.1:1")
	cfg.DatabaseURL, cfg.DBPool = url, size
	cfg.Target = "kit-test-" + strconv.Itoa(size)
	return newTestApp(t, cfg), url
}

// backends counts the server's connections named application_name, and how many of them
// run a query.
func backends(t *testing.T, url, name string) (all, active int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE state = 'active') FROM pg_stat_activity WHERE application_name = $1", name).Scan(&all, &active)
	if err != nil {
		t.Fatal(err)
	}
	return all, active
}

func appName(a *App) string { return "lab " + a.Config.Target + " " + strconv.Itoa(a.Pid) }

func TestDBLive(t *testing.T) {
	a, _ := dbApp(t, 0)
	code, body, took := call(t, a, "/db?ms=100", nil)
	if code != 200 || body["ms"] != float64(100) || took < 100*time.Millisecond || took > time.Second {
		t.Errorf("/db?ms=100: %d %v in %v", code, body, took)
	}
	vectors, _ := testContract.DBVectors()
	for _, v := range vectors {
		path := "/db-rows?n=" + strconv.Itoa(v.N) + "&seed=" + strconv.FormatUint(v.Seed, 10)
		code, body, _ := call(t, a, path, nil)
		if code != 200 || body["checksum"] != float64(v.Checksum) || body["endpoint"] != "db-rows" {
			t.Errorf("%s: %d %v; want checksum %d", path, code, body, v.Checksum)
		}
	}
}

// pool + 1 concurrent /db: two rounds, and the server sees exactly pool connections.
func TestDBPoolAtTheServer(t *testing.T) {
	const size, ms = 3, 400
	a, url := dbApp(t, size)
	start := time.Now()
	var wg sync.WaitGroup
	for range size + 1 {
		wg.Go(func() {
			if code, body, _ := call(t, a, "/db?ms="+strconv.Itoa(ms), nil); code != 200 {
				t.Errorf("/db: %d %v", code, body)
			}
		})
	}
	time.Sleep(ms / 2 * time.Millisecond)
	all, active := backends(t, url, appName(a))
	wg.Wait()
	took := time.Since(start)
	if all != size || active != size {
		t.Errorf("mid-flight: %d connections, %d active for %q; want %d and %d", all, active, appName(a), size, size)
	}
	if took < 2*ms*time.Millisecond || took > (2*ms+400)*time.Millisecond {
		t.Errorf("%d concurrent /db?ms=%d on a pool of %d took %v; want two rounds", size+1, ms, size, took)
	}
}

// A client that goes away cancels its query at the server (not only its wait); the
// contract's timeout answers 503 for a slow query and for a pool that stays busy.
func TestDBCancelAndTimeout(t *testing.T) {
	a, url := dbApp(t, 1)
	e, _ := testContract.Endpoint("db")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	code, _ := a.dbSleep(ctx, e, Request{Values: contract.Values{"ms": 5000}})
	if took := time.Since(start); code != 503 || took > 1500*time.Millisecond {
		t.Errorf("/db?ms=5000, client gone at 200ms: %d after %v", code, took)
	}
	time.Sleep(300 * time.Millisecond) // the cancel request's round trip
	if all, active := backends(t, url, appName(a)); all > 1 || active != 0 {
		t.Errorf("after the cancel: %d connections, %d active; want the query stopped at the server", all, active)
	}

	a.db.timeout = 300 * time.Millisecond
	code, body, took := call(t, a, "/db?ms=2000", nil)
	if code != 503 || body["error"] != "database: no answer within 300ms" || took > 1500*time.Millisecond {
		t.Errorf("slow query: %d %v after %v", code, body, took)
	}
	held, err := a.db.pool.Acquire(context.Background()) // the pool's only connection
	if err != nil {
		t.Fatal(err)
	}
	code, body, took = call(t, a, "/db-rows?n=1", nil)
	held.Release()
	if code != 503 || body["error"] != "database: no pooled connection within 300ms" || took > time.Second {
		t.Errorf("busy pool: %d %v after %v", code, body, took)
	}
}

// SIGTERM with /db?ms=10000 in flight: the server's shutdown cuts the request, its query
// is canceled, and Close (which waits for the pool's connections) returns at once.
func TestDBShutdownCancelsTheQuery(t *testing.T) {
	a, url := dbApp(t, 0)
	e, _ := testContract.Endpoint("db")
	inFlight := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inFlight)
		a.dbSleep(r.Context(), e, Request{Values: contract.Values{"ms": 10000}})
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.RunUntil(ctx, srv, ln, nil) }()
	go func() {
		if resp, err := http.Get("http://" + ln.Addr().String() + "/db"); err == nil {
			resp.Body.Close()
		}
	}()
	<-inFlight
	time.Sleep(200 * time.Millisecond) // the query is running
	start := time.Now()
	stop()
	<-done
	a.Close()
	if took := time.Since(start); took > serve.GracefulTimeout+time.Second {
		t.Errorf("shutdown and Close took %v; want about %v", took, serve.GracefulTimeout)
	}
	if all, _ := backends(t, url, appName(a)); all != 0 {
		t.Errorf("%d connections left after Close", all)
	}
}
