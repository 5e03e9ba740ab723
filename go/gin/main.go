// The Go target on Gin: Gin in release mode on net/http, one process, a goroutine per
// request. Endpoint logic, the contract's parameter grammar, /info and serving until
// SIGTERM are in lab/go/internal/kit; this file is how Gin routes, validates, answers
// JSON and handles unknown paths, other methods and panics.
// Environment: HOST, PORT, UPSTREAM_URL, LAB_TARGET, LAB_PROFILE, POOL_PROCESSES, DATABASE_URL,
// DB_POOL (see kit).
package main

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"lab/go/internal/kit"
)

func main() {
	gin.SetMode(gin.ReleaseMode)
	kit.Main("gin", gin.Version, func(a *kit.App) (http.Handler, error) { return router(a) })
}

// router registers every contract endpoint as a GET route.
func router(a *kit.App) (*gin.Engine, error) {
	endpoints, err := a.Endpoints()
	if err != nil {
		return nil, err
	}
	r := gin.New()
	r.Use(gin.CustomRecovery(func(c *gin.Context, _ any) {
		c.AbortWithStatusJSON(http.StatusInternalServerError, a.InternalError())
	}))
	r.RedirectTrailingSlash = false // "/hello/" is an unknown path: 404, not a redirect
	r.HandleMethodNotAllowed = true // another method on a route's path: NoMethod with Allow: GET
	r.NoRoute(func(c *gin.Context) {
		c.JSON(http.StatusNotFound, a.NotFound(c.Request.URL.Path))
	})
	r.NoMethod(func(c *gin.Context) { // HEAD and OPTIONS too: Gin routes them like any method
		c.JSON(http.StatusMethodNotAllowed, a.MethodNotAllowed(c.Request.Method))
	})
	for _, e := range endpoints {
		r.GET(e.Path, handle(e))
	}
	return r, nil
}

// handle binds the query with the contract's grammar (400 names the parameter), does the
// endpoint's work in this request's goroutine and answers its JSON.
func handle(e kit.Endpoint) gin.HandlerFunc {
	return func(c *gin.Context) {
		req, bad := e.Bind(c.Request)
		if bad != nil {
			c.JSON(http.StatusBadRequest, bad)
			return
		}
		c.JSON(e.Serve(c.Request.Context(), req))
	}
}
