package kit

import "strings"

// The contract's error bodies that are not about a parameter (those are contract.BadParam).
// Every one is JSON with an "error" string, the contract's template (x-lab.errors).

// NotFound is the 404 body for a path the contract does not have (any method).
func (a *App) NotFound(path string) map[string]string {
	return map[string]string{"error": a.Contract.Errors.Message("not-found", nil), "path": path}
}

// MethodNotAllowed is the 405 body for any method but GET on a contract path; the
// answer also carries Allow: GET.
func (a *App) MethodNotAllowed(method string) map[string]string {
	msg := a.Contract.Errors.Message("method-not-allowed", nil)
	return map[string]string{"error": msg, "method": method}
}

// Allow is the Allow header of a 405: the contract serves GET only.
const Allow = "GET"

// InternalError is the 500 body when a handler panics.
func (a *App) InternalError() map[string]string {
	return map[string]string{"error": a.Contract.Errors.Message("internal", nil)}
}

// dbError is the 503 body (x-lab.errors.database), on one line: pgx lists each connection
// attempt on a line of its own.
func (a *App) dbError(err error) map[string]string {
	reason := strings.Join(strings.Fields(err.Error()), " ")
	return map[string]string{"error": a.Contract.Errors.Message("database", map[string]any{"reason": reason})}
}
