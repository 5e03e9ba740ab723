package main

import (
	"io"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"lab/go/internal/contract"
	"lab/go/internal/kit"
	"lab/go/internal/kit/kittest"
)

func init() {
	gin.SetMode(gin.ReleaseMode)
	gin.DefaultErrorWriter = io.Discard // the planted panic's stack
}

func TestStrictContract(t *testing.T) {
	kittest.Router(t, func(a *kit.App) (http.Handler, error) { return router(a) })
}

func TestEveryEndpointIsAGinGETRoute(t *testing.T) {
	r, err := router(kittest.NewApp(t))
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]bool{}
	for _, ri := range r.Routes() {
		routes[ri.Method+" "+ri.Path] = true
	}
	endpoints := contract.MustLoad().Endpoints
	for _, e := range endpoints {
		if !routes["GET "+e.Path] {
			t.Errorf("GET %s (%s) is not a route", e.Path, e.Name)
		}
	}
	if len(routes) != len(endpoints) {
		t.Errorf("%d routes for %d endpoints: %v", len(routes), len(endpoints), routes)
	}
}

func TestPanicIsJSON500(t *testing.T) {
	r, err := router(kittest.NewApp(t))
	if err != nil {
		t.Fatal(err)
	}
	r.GET("/panic", func(*gin.Context) { panic("a bug") })
	kittest.Panics(t, r, "/panic")
}
