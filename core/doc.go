// Package core holds hilodb's documents: key and name rules, revisions (a
// hybrid logical clock plus the node tag), error numbers, and the document
// store over buntdb.
//
// # Wasm
//
// core uses neither os, net nor syscall/js, and builds and passes its tests
// on the host and under GOOS=js GOARCH=wasm.
//
// # Concurrency
//
// Store and Clock are safe for concurrent use.
package core
