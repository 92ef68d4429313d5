//go:build !js

// Package hostrand gives random bytes from the host: natively the
// operating system's (crypto/rand); under WebAssembly the host's
// crypto.getRandomValues (browsers, Node, workerd), without linking
// crypto/rand into the browser build. UUIDs and local node tags are made
// from them.
//
// # Concurrency
//
// Read is safe for concurrent use.
package hostrand

import "crypto/rand"

// Read fills b with random bytes from the operating system.
func Read(b []byte) { _, _ = rand.Read(b) }
