// Package contract reads the endpoint contract (contract/openapi.json) at run time:
// the one place endpoint names, parameters, defaults and bounds are written down.
// Go cannot embed a file outside its module, so the file is found on disk:
// $LAB_CONTRACT, else the first contract/openapi.json walking up from the current
// directory, else walking up from the executable's directory.
package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Param is one integer query parameter with its default and bounds.
type Param struct {
	Name        string
	Default     int
	Min         int
	Max         int
	Description string
}

// Endpoint is one operation of the contract.
type Endpoint struct {
	Name    string // operationId
	Path    string
	Method  string // upper case, e.g. GET
	Kind    string // none | sleep | cpu | upstream | meta
	Service string // service time as an expression of the params ("ms", "n*ms", ...)
	// MaxServiceMS caps Service evaluated with a request's values (x-lab.max_service_ms);
	// 0 means no cap.
	MaxServiceMS int
	Summary      string
	Params       []Param
	errors       Errors // the contract's message templates: Parse's 400 bodies
}

// Bench reports whether /info must give a capacity for the endpoint.
func (e Endpoint) Bench() bool { return e.Kind != "meta" }

// Param returns the named parameter.
func (e Endpoint) Param(name string) (Param, bool) {
	for _, p := range e.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// Contract is the parsed openapi.json, endpoints in document order.
type Contract struct {
	Version   string
	Endpoints []Endpoint
	Dir       string // directory of openapi.json
	Ext       map[string]any
	Errors    Errors // x-lab.errors: every error body's message
}

// Errors are the contract's message templates (x-lab.errors) by kind: "{name}" and the
// like are filled in by Message.
type Errors map[string]string

// ErrorKinds are the templates a kit needs; Decode refuses a contract without one.
var ErrorKinds = []string{
	"repeated", "grammar", "bounds", "max-service", "max-service-param",
	"not-found", "method-not-allowed", "internal", "database",
}

var placeholder = regexp.MustCompile(`\{(\w+)\}`)

// Message is the template of kind with its {placeholders} filled in from values.
func (t Errors) Message(kind string, values map[string]any) string {
	return placeholder.ReplaceAllStringFunc(t[kind], func(m string) string {
		return fmt.Sprint(values[m[1:len(m)-1]])
	})
}

// Endpoint returns the endpoint named name (its operationId).
func (c *Contract) Endpoint(name string) (Endpoint, bool) {
	for _, e := range c.Endpoints {
		if e.Name == name {
			return e, true
		}
	}
	return Endpoint{}, false
}

// BenchEndpoints are the endpoints whose kind is not "meta".
func (c *Contract) BenchEndpoints() []Endpoint {
	var out []Endpoint
	for _, e := range c.Endpoints {
		if e.Bench() {
			out = append(out, e)
		}
	}
	return out
}

// Vector is one FNV-1a test vector.
type Vector struct {
	N      int    `json:"n"`
	Result uint32 `json:"result"`
}

// CPUVectors reads the test vectors file the contract points to (x-lab.cpu-test-vectors).
func (c *Contract) CPUVectors() ([]Vector, error) {
	return readVectors[Vector](c, "cpu-test-vectors")
}

// readVectors reads the "vectors" of the test vectors file named by x-lab.<key>.
func readVectors[T any](c *Contract, key string) ([]T, error) {
	name, _ := c.Ext[key].(string)
	if name == "" {
		return nil, fmt.Errorf("contract: no x-lab.%s", key)
	}
	raw, err := os.ReadFile(filepath.Join(c.Dir, name))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Vectors []T `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("contract: %s: %w", name, err)
	}
	return doc.Vectors, nil
}

const relPath = "contract/openapi.json"

// Find returns the path of openapi.json: $LAB_CONTRACT, else walking up from the
// current directory, else walking up from the executable's directory.
func Find() (string, error) {
	if p := os.Getenv("LAB_CONTRACT"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("contract: LAB_CONTRACT: %w", err)
		}
		return p, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, relPath)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", errors.New("contract: " + relPath + " not found (set LAB_CONTRACT)")
}

// Load finds and parses the contract.
func Load() (*Contract, error) {
	p, err := Find()
	if err != nil {
		return nil, err
	}
	return LoadFile(p)
}

// MustLoad is Load that panics; for main packages and tests.
func MustLoad() *Contract {
	c, err := Load()
	if err != nil {
		panic(err)
	}
	return c
}

// LoadFile parses the contract at path.
func LoadFile(path string) (*Contract, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	c.Dir = filepath.Dir(abs)
	return c, nil
}

type rawParam struct {
	Ref         string `json:"$ref"`
	Name        string `json:"name"`
	In          string `json:"in"`
	Description string `json:"description"`
	Schema      struct {
		Type    string `json:"type"`
		Default *int   `json:"default"`
		Minimum *int   `json:"minimum"`
		Maximum *int   `json:"maximum"`
	} `json:"schema"`
}

type rawOp struct {
	OperationID string     `json:"operationId"`
	Summary     string     `json:"summary"`
	Parameters  []rawParam `json:"parameters"`
	XLab        struct {
		Kind         string `json:"kind"`
		Service      string `json:"service"`
		MaxServiceMS *int   `json:"max_service_ms"`
	} `json:"x-lab"`
}

// Decode reads openapi.json's text. (Endpoint.Parse reads a request's query.)
func Decode(raw []byte) (*Contract, error) {
	var doc struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
		XLab       map[string]any  `json:"x-lab"`
		Paths      json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]rawParam `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	paths, err := orderedKeys(doc.Paths)
	if err != nil {
		return nil, fmt.Errorf("paths: %w", err)
	}
	var items map[string]map[string]rawOp
	if err := json.Unmarshal(doc.Paths, &items); err != nil {
		return nil, fmt.Errorf("paths: %w", err)
	}
	var xlab struct {
		Errors Errors `json:"errors"`
	}
	if err := json.Unmarshal(raw, &struct {
		XLab *struct {
			Errors Errors `json:"errors"`
		} `json:"x-lab"`
	}{&xlab}); err != nil {
		return nil, fmt.Errorf("x-lab.errors: %w", err)
	}
	for _, kind := range ErrorKinds {
		if _, ok := xlab.Errors[kind]; !ok {
			return nil, fmt.Errorf("x-lab.errors: no %q template", kind)
		}
	}
	c := &Contract{Version: doc.Info.Version, Ext: doc.XLab, Errors: xlab.Errors}
	seen := map[string]bool{}
	for _, path := range paths {
		for method, op := range items[path] {
			if op.OperationID == "" {
				return nil, fmt.Errorf("%s %s: no operationId", method, path)
			}
			if seen[op.OperationID] {
				return nil, fmt.Errorf("operationId %q twice", op.OperationID)
			}
			seen[op.OperationID] = true
			e := Endpoint{
				Name:    op.OperationID,
				Path:    path,
				Method:  strings.ToUpper(method),
				Kind:    op.XLab.Kind,
				Service: op.XLab.Service,
				Summary: op.Summary,
				errors:  xlab.Errors,
			}
			if e.Kind == "" {
				e.Kind = "meta"
			}
			for _, rp := range op.Parameters {
				if rp.Ref != "" {
					const prefix = "#/components/parameters/"
					ref, ok := doc.Components.Parameters[strings.TrimPrefix(rp.Ref, prefix)]
					if !strings.HasPrefix(rp.Ref, prefix) || !ok {
						return nil, fmt.Errorf("%s: unresolved $ref %q", e.Name, rp.Ref)
					}
					rp = ref
				}
				s := rp.Schema
				if rp.Name == "" || s.Default == nil || s.Minimum == nil || s.Maximum == nil {
					return nil, fmt.Errorf("%s: parameter %q needs name, default, minimum and maximum", e.Name, rp.Name)
				}
				e.Params = append(e.Params, Param{
					Name: rp.Name, Default: *s.Default, Min: *s.Minimum, Max: *s.Maximum,
					Description: rp.Description,
				})
			}
			if m := op.XLab.MaxServiceMS; m != nil {
				if _, ok := e.ServiceMS(e.defaults()); !ok || *m < 1 {
					return nil, fmt.Errorf("%s: max_service_ms %d needs a service expression of its params, got %q", e.Name, *m, e.Service)
				}
				e.MaxServiceMS = *m
			}
			c.Endpoints = append(c.Endpoints, e)
		}
	}
	return c, nil
}

// orderedKeys returns the keys of a JSON object in document order.
func orderedKeys(obj json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}
