package contract

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
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

func TestParseBadDocument(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "openapi.json")
	doc := `{"info":{"version":"1"},"paths":{"/x":{"get":{"operationId":"x","parameters":[{"$ref":"#/components/parameters/nope"}]}}}}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(p); err == nil {
		t.Fatal("unresolved $ref accepted")
	}
}

func TestParseParams(t *testing.T) {
	c := MustLoad()
	g, _ := c.Endpoint("gather")
	ms, _ := g.Param("ms")
	n, _ := g.Param("n")
	cases := []struct {
		query string
		bad   string // offending param, "" when fine
		ms, n int
	}{
		{"", "", ms.Default, n.Default},
		{"ms=5&n=3", "", 5, 3},
		{"ms=abc", "ms", 0, 0},
		{"ms=-1", "ms", 0, 0},
		{"ms=1.5", "ms", 0, 0},
		{"ms=", "ms", 0, 0},
		{"ms=1e3", "ms", 0, 0},
		{"ms=9999999999999", "ms", 0, 0},
		{"n=0", "n", 0, 0},
		{"ms=1&n=999999", "n", 0, 0},
	}
	for _, tc := range cases {
		q, _ := url.ParseQuery(tc.query)
		v, bad := g.Parse(Query(q))
		if tc.bad != "" {
			if bad == nil || bad.Param != tc.bad || bad.Message == "" {
				t.Errorf("%q: got %v, %+v; want bad %s", tc.query, v, bad, tc.bad)
			}
			continue
		}
		if bad != nil || v["ms"] != tc.ms || v["n"] != tc.n {
			t.Errorf("%q: got %v, %+v", tc.query, v, bad)
		}
	}
	h, _ := c.Endpoint("hello")
	if v, bad := h.Parse(Query(url.Values{"ms": {"x"}})); v != nil || bad != nil {
		t.Errorf("hello takes no params: %v %v", v, bad)
	}
}
