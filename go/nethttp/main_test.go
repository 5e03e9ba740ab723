package main

import (
	"io"
	"log"
	"net/http"
	"os"
	"testing"

	"lab/go/internal/kit/kittest"
)

func TestStrictContract(t *testing.T) { kittest.Router(t, handler) }

func TestPanicIsJSON500(t *testing.T) {
	a := kittest.NewApp(t)
	mux, err := newMux(a)
	if err != nil {
		t.Fatal(err)
	}
	mux.HandleFunc("GET /panic", func(http.ResponseWriter, *http.Request) { panic("a bug") })
	log.SetOutput(io.Discard) // the planted panic's stack
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	kittest.Panics(t, recoverJSON(a, mux), "/panic")
}

// http.ErrAbortHandler is net/http's way to abort a response: recoverJSON lets it through.
func TestAbortHandlerIsNotA500(t *testing.T) {
	a := kittest.NewApp(t)
	mux, err := newMux(a)
	if err != nil {
		t.Fatal(err)
	}
	mux.HandleFunc("GET /abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	srv := kittest.NewServer(t, recoverJSON(a, mux))
	resp, err := srv.Client().Get(srv.URL + "/abort")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("aborted response answered %d", resp.StatusCode)
	}
}
