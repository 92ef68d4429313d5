//go:build !js

package core

import "crypto/rand"

// randomBytes fills b with random bytes from the operating system.
func randomBytes(b []byte) { _, _ = rand.Read(b) }
