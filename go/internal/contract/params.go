package contract

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// BadParam is a query parameter the contract refuses; it is the 400 body.
type BadParam struct {
	Message string `json:"error"`
	Param   string `json:"param"`
}

func (b *BadParam) Error() string { return b.Message }

// Values are an endpoint's parsed parameters, defaults filled in.
type Values map[string]int

// Query is a request's decoded query parameters, every value of each, as url.Values.
type Query url.Values

// NewQuery splits a raw query string as url.ParseQuery does, but keeps what Go would
// drop: a value with a bad %-escape stays as written, and ';' is not a separator.
// Either way the grammar then refuses it, as the Python targets do.
func NewQuery(raw string) Query {
	q := Query{}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		key, value, _ := strings.Cut(pair, "=")
		q[unescape(key)] = append(q[unescape(key)], unescape(value))
	}
	return q
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// integer is the contract's one grammar: ASCII digits, no sign, no leading zeros, ≤ 9 digits.
var integer = regexp.MustCompile(`^(0|[1-9][0-9]{0,8})$`)

// Parse reads the endpoint's parameters from q in contract order; for each: given more
// than once, then the grammar, then the bounds; then the total-wait cap. The first
// failure is returned.
func (e Endpoint) Parse(q Query) (Values, *BadParam) {
	v := e.defaults()
	for _, p := range e.Params {
		raw, ok := q[p.Name]
		switch {
		case !ok:
			continue
		case len(raw) > 1:
			return nil, e.bad("repeated", p.Name, nil)
		case !integer.MatchString(raw[0]):
			return nil, e.bad("grammar", p.Name, nil)
		}
		n, _ := strconv.Atoi(raw[0]) // at most 9 digits: always fits
		if n < p.Min || n > p.Max {
			return nil, e.bad("bounds", p.Name, map[string]any{"minimum": p.Min, "maximum": p.Max})
		}
		v[p.Name] = n
	}
	if e.MaxServiceMS > 0 {
		if total, _ := e.ServiceMS(v); total > e.MaxServiceMS {
			values := map[string]any{"max_service_ms": e.MaxServiceMS}
			return nil, e.bad("max-service", e.errors["max-service-param"], values)
		}
	}
	return v, nil
}

// bad is the 400 body of the contract's template `kind` for parameter name.
func (e Endpoint) bad(kind, name string, values map[string]any) *BadParam {
	filled := map[string]any{"name": name}
	for k, v := range values {
		filled[k] = v
	}
	return &BadParam{e.errors.Message(kind, filled), name}
}

func (e Endpoint) defaults() Values {
	v := make(Values, len(e.Params))
	for _, p := range e.Params {
		v[p.Name] = p.Default
	}
	return v
}

// ServiceMS evaluates the service expression, a product of parameter names and integers
// ("0", "ms", "n*ms"), with v; ok is false when it is not such a product ("calibrated").
func (e Endpoint) ServiceMS(v Values) (ms int, ok bool) {
	ms = 1
	for term := range strings.SplitSeq(e.Service, "*") {
		term = strings.TrimSpace(term)
		if n, err := strconv.Atoi(term); err == nil {
			ms *= n
		} else if n, found := v[term]; found {
			ms *= n
		} else {
			return 0, false
		}
	}
	return ms, true
}

// RequestIDHeader is the header a request may carry and every upstream call it makes repeats.
const RequestIDHeader = "X-Lab-Request-Id"

var requestID = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// RequestID returns the header's value when it is a valid id (1-64 of [A-Za-z0-9-]), else "".
func RequestID(value string) string {
	if requestID.MatchString(value) {
		return value
	}
	return ""
}
