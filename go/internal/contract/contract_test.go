package contract

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.Version == "" || len(c.Endpoints) == 0 {
		t.Fatalf("empty contract: %+v", c)
	}
	for _, name := range []string{"hello", "sync", "gather", "cpu", "cpu-pool", "upstream", "health", "info"} {
		if _, ok := c.Endpoint(name); !ok {
			t.Errorf("no endpoint %q", name)
		}
	}
	if c.Endpoints[0].Name != "hello" {
		t.Errorf("document order lost: first endpoint %q", c.Endpoints[0].Name)
	}
	g, _ := c.Endpoint("gather")
	if g.Path != "/gather" || g.Method != "GET" || g.Kind != "sleep" || len(g.Params) != 2 {
		t.Errorf("gather: %+v", g)
	}
	for _, e := range c.Endpoints {
		for _, p := range e.Params {
			if p.Min > p.Max || p.Default < p.Min || p.Default > p.Max {
				t.Errorf("%s.%s: bad bounds %+v", e.Name, p.Name, p)
			}
		}
	}
	for _, e := range c.BenchEndpoints() {
		if e.Kind == "meta" {
			t.Errorf("%s is meta", e.Name)
		}
	}
}

func TestLabContractEnv(t *testing.T) {
	p, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LAB_CONTRACT", p)
	if got, err := Find(); err != nil || got != p {
		t.Fatalf("Find() = %q, %v", got, err)
	}
	t.Setenv("LAB_CONTRACT", filepath.Join(t.TempDir(), "missing.json"))
	if _, err := Find(); err == nil {
		t.Fatal("missing LAB_CONTRACT accepted")
	}
}

// xlabErrors is a document's x-lab with every template Decode requires.
const xlabErrors = `"x-lab":{"errors":{"repeated":"r","grammar":"g","bounds":"b","max-service":"m",` +
	`"max-service-param":"n","not-found":"nf","method-not-allowed":"mna","internal":"i","database":"d"}}`

func TestDecodeNeedsEveryErrorTemplate(t *testing.T) {
	ok := `{"info":{"version":"1"},` + xlabErrors + `,"paths":{}}`
	if _, err := Decode([]byte(ok)); err != nil {
		t.Fatalf("every template given: %v", err)
	}
	missing := strings.Replace(ok, `"internal":"i",`, "", 1)
	if _, err := Decode([]byte(missing)); err == nil || !strings.Contains(err.Error(), `"internal"`) {
		t.Fatalf("no internal template: %v; want an error naming it", err)
	}
}

// Parse's 400 bodies are the contract's templates, not copies of them.
func TestParseFollowsTheTemplates(t *testing.T) {
	e, _ := MustLoad().Endpoint("sequential")
	e.errors = Errors{"repeated": "R {name}", "grammar": "G {name}", "bounds": "B {name} {minimum}-{maximum}",
		"max-service": "M {max_service_ms}", "max-service-param": "n"}
	for query, want := range map[string]BadParam{
		"ms=1&ms=2":      {"R ms", "ms"},
		"ms=x":           {"G ms", "ms"},
		"n=0":            {"B n 1-100", "n"},
		"ms=10000&n=100": {"M 10000", "n"},
	} {
		if _, bad := e.Parse(NewQuery(query)); bad == nil || *bad != want {
			t.Errorf("%s: %+v; want %+v", query, bad, want)
		}
	}
}

func TestParseBadDocument(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "openapi.json")
	doc := `{"info":{"version":"1"},` + xlabErrors + `,"paths":{"/x":{"get":{"operationId":"x","parameters":[{"$ref":"#/components/parameters/nope"}]}}}}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(p); err == nil {
		t.Fatal("unresolved $ref accepted")
	}
}

func TestDecodeMaxServiceMS(t *testing.T) {
	c := MustLoad()
	for _, name := range []string{"sequential", "upstream-seq"} {
		if e, _ := c.Endpoint(name); e.MaxServiceMS != 10000 {
			t.Errorf("%s: MaxServiceMS %d; want the contract's 10000", name, e.MaxServiceMS)
		}
	}
	if e, _ := c.Endpoint("gather"); e.MaxServiceMS != 0 {
		t.Errorf("gather has no cap in the contract, got %d", e.MaxServiceMS)
	}
	// A cap on an expression that is not a product of the params is a broken contract.
	doc := `{"info":{"version":"1"},` + xlabErrors + `,"paths":{"/x":{"get":{"operationId":"x","x-lab":{"kind":"cpu","service":"calibrated","max_service_ms":5}}}}}`
	if _, err := Decode([]byte(doc)); err == nil {
		t.Fatal("max_service_ms on a calibrated service accepted")
	}
}

func TestServiceMS(t *testing.T) {
	v := Values{"ms": 7, "n": 3}
	cases := []struct {
		service string
		want    int
		ok      bool
	}{{"0", 0, true}, {"ms", 7, true}, {"n*ms", 21, true}, {"n * ms", 21, true}, {"2*ms", 14, true}, {"calibrated", 0, false}, {"x*ms", 0, false}}
	for _, tc := range cases {
		got, ok := Endpoint{Service: tc.service}.ServiceMS(v)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ServiceMS(%q) = %d, %v; want %d, %v", tc.service, got, ok, tc.want, tc.ok)
		}
	}
}

// The contract's one integer grammar, then bounds, then repeats, then the total-wait cap,
// as the spec writes them (strict-contract.md §2-3).
func TestParse(t *testing.T) {
	c := MustLoad()
	const grammar, once = " must be an integer without sign or leading zeros", " must be given once"
	cases := []struct {
		endpoint, query string
		param, msg      string // the 400, "" when accepted
		want            Values
	}{
		{"gather", "", "", "", Values{"ms": 100, "n": 10}},
		{"gather", "ms=5&n=3", "", "", Values{"ms": 5, "n": 3}},
		{"gather", "ms=0&n=1&other=x&other=y", "", "", Values{"ms": 0, "n": 1}},
		{"sync", "ms=10000", "", "", Values{"ms": 10000}},
		{"cpu", "n=20000000", "", "", Values{"n": 20000000}},
		{"sync", "ms=", "ms", "ms" + grammar, nil},
		{"sync", "ms", "ms", "ms" + grammar, nil},
		{"sync", "ms=1.0", "ms", "ms" + grammar, nil},
		{"sync", "ms=1_0", "ms", "ms" + grammar, nil},
		{"sync", "ms=+5", "ms", "ms" + grammar, nil},
		{"sync", "ms=%2B5", "ms", "ms" + grammar, nil},
		{"sync", "ms=%205", "ms", "ms" + grammar, nil},
		{"sync", "ms=5%20", "ms", "ms" + grammar, nil},
		{"sync", "ms=007", "ms", "ms" + grammar, nil},
		{"sync", "ms=00", "ms", "ms" + grammar, nil},
		{"sync", "ms=-1", "ms", "ms" + grammar, nil},
		{"sync", "ms=-0", "ms", "ms" + grammar, nil},
		{"sync", "ms=abc", "ms", "ms" + grammar, nil},
		{"sync", "ms=1e3", "ms", "ms" + grammar, nil},
		{"sync", "ms=0x10", "ms", "ms" + grammar, nil},
		{"sync", "ms=%D9%A3", "ms", "ms" + grammar, nil}, // Arabic-Indic digit three
		{"sync", "ms=%zz", "ms", "ms" + grammar, nil},    // a bad escape is not dropped
		{"sync", "ms=1;n=2", "ms", "ms" + grammar, nil},  // ';' is not a separator
		{"sync", "ms=1234567890", "ms", "ms" + grammar, nil},
		{"sync", "ms=99999999999999999999", "ms", "ms" + grammar, nil},
		{"sync", "ms=10001", "ms", "ms must be between 0 and 10000", nil},
		{"sync", "ms=999999999", "ms", "ms must be between 0 and 10000", nil},
		{"gather", "n=0", "n", "n must be between 1 and 100", nil},
		{"sync", "ms=1&ms=2", "ms", "ms" + once, nil},
		{"sync", "ms=1&ms=1", "ms", "ms" + once, nil},
		{"sync", "ms=abc&ms=abc", "ms", "ms" + once, nil},
		{"sync", "m%73=1&ms=2", "ms", "ms" + once, nil}, // names are decoded too
		// Contract order: ms before n, whatever the query's order.
		{"gather", "n=abc&ms=abc", "ms", "ms" + grammar, nil},
		{"gather", "n=1&n=2&ms=-1", "ms", "ms" + grammar, nil},
		{"gather", "ms=1&n=1&n=1", "n", "n" + once, nil},
		// The total-wait cap, after every parameter is fine.
		{"sequential", "ms=10000&n=1", "", "", Values{"ms": 10000, "n": 1}},
		{"sequential", "ms=100&n=100", "", "", Values{"ms": 100, "n": 100}},
		{"sequential", "ms=10000&n=2", "n", "n * ms must be at most 10000", nil},
		{"upstream-seq", "ms=101&n=100", "n", "n * ms must be at most 10000", nil},
		{"sequential", "ms=10000&n=0", "n", "n must be between 1 and 100", nil},
		{"sequential", "ms=2000", "n", "n * ms must be at most 10000", nil}, // default n=10
		{"gather", "ms=10000&n=100", "", "", Values{"ms": 10000, "n": 100}}, // concurrent: no cap
		{"upstream", "ms=10000&n=100", "", "", Values{"ms": 10000, "n": 100}},
	}
	for _, tc := range cases {
		e, ok := c.Endpoint(tc.endpoint)
		if !ok {
			t.Fatalf("no endpoint %s", tc.endpoint)
		}
		v, bad := e.Parse(NewQuery(tc.query))
		if tc.msg != "" {
			if bad == nil || bad.Param != tc.param || bad.Message != tc.msg || v != nil {
				t.Errorf("%s?%s: %v, %+v; want 400 {%q, %q}", tc.endpoint, tc.query, v, bad, tc.msg, tc.param)
			}
			continue
		}
		if bad != nil || len(v) != len(tc.want) {
			t.Errorf("%s?%s: %v, %+v; want %v", tc.endpoint, tc.query, v, bad, tc.want)
			continue
		}
		for k, want := range tc.want {
			if v[k] != want {
				t.Errorf("%s?%s: %s = %d; want %d", tc.endpoint, tc.query, k, v[k], want)
			}
		}
	}
	h, _ := c.Endpoint("hello")
	if v, bad := h.Parse(NewQuery("ms=x&ms=y")); len(v) != 0 || bad != nil {
		t.Errorf("hello takes no params: %v %v", v, bad)
	}
}

func TestNewQuery(t *testing.T) {
	q := NewQuery("a=1&a=2&b=%41+c&&c&d=%zz&e=1;f=2")
	want := Query{"a": {"1", "2"}, "b": {"A c"}, "c": {""}, "d": {"%zz"}, "e": {"1;f=2"}}
	if len(q) != len(want) {
		t.Fatalf("NewQuery = %v; want %v", q, want)
	}
	for k, vs := range want {
		if len(q[k]) != len(vs) {
			t.Errorf("%s: %v; want %v", k, q[k], vs)
			continue
		}
		for i := range vs {
			if q[k][i] != vs[i] {
				t.Errorf("%s: %v; want %v", k, q[k], vs)
			}
		}
	}
	// url.Values converts: the upstream service parses r.URL.Query() the same way.
	g, _ := MustLoad().Endpoint("gather")
	if _, bad := g.Parse(Query(url.Values{"ms": {"1", "2"}})); bad == nil || bad.Param != "ms" {
		t.Errorf("repeated ms through url.Values: %+v", bad)
	}
}

func TestRequestID(t *testing.T) {
	long := strings.Repeat("a", 64)
	for in, want := range map[string]string{
		"abc-123": "abc-123", long: long, "": "", long + "a": "", "a b": "", "a_b": "", "é": "", "a\n": "",
	} {
		if got := RequestID(in); got != want {
			t.Errorf("RequestID(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestDatabase(t *testing.T) {
	c := MustLoad()
	d, err := c.Database()
	if err != nil {
		t.Fatal(err)
	}
	if d.URLEnv != "DATABASE_URL" || d.PoolEnv != "DB_POOL" || d.Timeout != 15*time.Second {
		t.Errorf("%+v", d)
	}
	if got := d.AppName("gin", 42); got != "lab gin 42" {
		t.Errorf("AppName = %q; want %q", got, "lab gin 42")
	}
	broken := *c
	broken.Ext = map[string]any{"database": map[string]any{"url-env": "X"}}
	if _, err := broken.Database(); err == nil {
		t.Error("an incomplete x-lab.database accepted")
	}
	vectors, err := c.DBVectors()
	if err != nil || len(vectors) == 0 {
		t.Fatal("no db vectors", err)
	}
	for _, v := range vectors {
		if v.N < 1 || len(v.IDs) != min(v.N, 5) || v.Checksum < int64(v.N) {
			t.Errorf("vector %+v", v)
		}
	}
}
