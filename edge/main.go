//go:build js && wasm

package main

import (
	"fmt"
	"os"
	"syscall/js"

	"github.com/syumai/workers"
	"github.com/syumai/workers/cloudflare"
)

func main() {
	turns := newTurns(js.Global().Get("context").Get("binding"))
	a, err := openApp(config{
		URL:      binding("HILODB_URL"),
		Database: binding("HILODB_DB"),
		Token:    binding("HILODB_TOKEN"),
	}, turns.enter)
	if err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
	// ServeNonBlock and Ready instead of workers.Serve: Serve returns after
	// the first response and the program would exit with its state. The
	// glue (worker.mjs) calls the handleRequest binding for every request.
	workers.ServeNonBlock(turns.wrap(a.handler()))
	workers.Ready()
	select {}
}

// binding returns the text binding name, or "" when it is missing or is not
// text (a fromEnvironment binding of an unset variable is null).
func binding(name string) string {
	v := cloudflare.GetBinding(name)
	if v.Type() != js.TypeString {
		return ""
	}
	return v.String()
}
