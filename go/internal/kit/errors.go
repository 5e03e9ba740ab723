package kit

// The contract's error bodies that are not about a parameter (those are contract.BadParam).
// Every one is JSON with an "error" string.

// NotFound is the 404 body for a path the contract does not have (any method).
func NotFound(path string) map[string]string {
	return map[string]string{"error": "not found", "path": path}
}

// MethodNotAllowed is the 405 body for any method but GET on a contract path; the
// answer also carries Allow: GET.
func MethodNotAllowed(method string) map[string]string {
	return map[string]string{"error": "method not allowed", "method": method}
}

// Allow is the Allow header of a 405: the contract serves GET only.
const Allow = "GET"

// InternalError is the 500 body when a handler panics.
func InternalError() map[string]string { return map[string]string{"error": "internal error"} }
