// Package keygen holds ArangoDB's key generators (a collection's
// keyOptions) as hilodb makes them: Options and their validation with
// ArangoDB's messages, and the keys a Generator makes for documents stored
// without one — traditional (1, 2, 3), autoincrement (offset +
// k·increment), padded (16 hex digits, string order = number order) and
// uuid — from HiLo numbers, so that no two clients make the same key.
// hilodb's default, hilo, makes RavenDB-style HiLo ids; the store makes
// those itself. docs/ids.md describes the generators.
//
// Errors are *Error values of a kind (ErrInvalid, ErrOutOfKeys,
// ErrNoNumbers); core gives them the store's error numbers (1232, 1225,
// needs_server).
//
// # Concurrency
//
// Options and Generator are values; NextKey is safe for concurrent use when
// its NumberSource is.
package keygen
