package core

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/hilodb/hilodb/errcode"
)

// Error numbers, from the registry (package errcode). Where the meaning
// matches, they are ArangoDB's numbers, so a client that knows ArangoDB's
// errors reads ours the same way.
var (
	NumBadParameter        = errcode.BadParameter.Num
	NumBadJSON             = errcode.BadJSON.Num
	NumConflict            = errcode.Conflict.Num
	NumDocumentNotFound    = errcode.NotFound.Num
	NumCollectionNotFound  = errcode.CollectionNotFound.Num
	NumDuplicateName       = errcode.DuplicateName.Num
	NumIllegalName         = errcode.IllegalName.Num
	NumUniqueConstraint    = errcode.UniqueConstraint.Num
	NumIllegalKey          = errcode.IllegalKey.Num
	NumUnexpectedKey       = errcode.UnexpectedKey.Num
	NumOutOfKeys           = errcode.OutOfKeys.Num
	NumInvalidKeyGenerator = errcode.InvalidKeyGenerator.Num
	NumNeedsServer         = errcode.NeedsServer.Num
	NumInternal            = errcode.Internal.Num
)

// Sentinel errors, one per error number. Every *Error returned by this
// package unwraps to one of them, so callers test with errors.Is.
var (
	ErrBadParameter        = errors.New("bad parameter")
	ErrBadJSON             = errors.New("malformed JSON")
	ErrConflict            = errors.New("conflict, _rev values do not match")
	ErrNotFound            = errors.New("document not found")
	ErrCollectionNotFound  = errors.New("collection not found")
	ErrDuplicateName       = errors.New("duplicate name")
	ErrIllegalName         = errors.New("illegal name")
	ErrUniqueConstraint    = errors.New("unique constraint violated")
	ErrIllegalKey          = errors.New("illegal document key")
	ErrUnexpectedKey       = errors.New("unexpected document key")
	ErrOutOfKeys           = errors.New("out of keys")
	ErrInvalidKeyGenerator = errors.New("invalid key generator")
	ErrNeedsServer         = errors.New("operation needs the sync server")
	ErrInternal            = errors.New("internal error")
	ErrBadQuery            = errors.New("bad query")
)

// kinds maps each sentinel to its code in the registry. It is made on
// first use, not at the program's start: an edge worker's first answer
// waits for every package's initialisation.
var kinds = sync.OnceValue(func() map[error]errcode.Code {
	return map[error]errcode.Code{
		ErrBadParameter:        errcode.BadParameter,
		ErrBadJSON:             errcode.BadJSON,
		ErrConflict:            errcode.Conflict,
		ErrNotFound:            errcode.NotFound,
		ErrCollectionNotFound:  errcode.CollectionNotFound,
		ErrDuplicateName:       errcode.DuplicateName,
		ErrIllegalName:         errcode.IllegalName,
		ErrUniqueConstraint:    errcode.UniqueConstraint,
		ErrIllegalKey:          errcode.IllegalKey,
		ErrUnexpectedKey:       errcode.UnexpectedKey,
		ErrOutOfKeys:           errcode.OutOfKeys,
		ErrInvalidKeyGenerator: errcode.InvalidKeyGenerator,
		ErrNeedsServer:         errcode.NeedsServer,
		ErrInternal:            errcode.Internal,
		ErrBadQuery:            errcode.BadQuery,
	}
})

// Error is the error type of the document layer. It carries an ArangoDB-style
// error number, a stable code word, and the key and current revision of the
// document concerned where there is one.
type Error struct {
	Num     int    // error number, e.g. 1221
	Code    string // stable code word, e.g. "illegal_key"
	Message string // human-readable text
	Key     string // document _key or _id concerned, if any
	Rev     string // current _rev of the document, for conflicts
	kind    error
	cause   error // the error this one was made from, if any
}

// Error implements error.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel for e.Num, so errors.Is(err, ErrConflict)
// works, and the error e was made from (a sync client's error, say), so
// errors.As finds it.
func (e *Error) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// HTTPStatus returns the HTTP status of e's code (ArangoDB's where it has
// one): 412 for a failed _rev precondition, 409 for a unique constraint, 404
// for a missing document or collection, 400 for bad input, 503 when the sync
// server is needed, 500 otherwise.
func (e *Error) HTTPStatus() int {
	if c, ok := errcode.ByNum(e.Num); ok {
		return c.Status
	}
	return 500
}

// NewError builds an *Error of kind, one of this package's sentinels
// (another kind gives ErrInternal), with a formatted message and the key
// and current revision of the document concerned, if any. It is how a
// package built on the store (a session, say) reports errors the same way.
func NewError(kind error, key, rev, format string, args ...any) *Error {
	return newError(kind, key, rev, format, args...)
}

// newError builds an *Error of the given kind with a formatted message.
func newError(kind error, key, rev, format string, args ...any) *Error {
	return errorOf(kind, key, rev, fmt.Sprintf(format, args...))
}

// errorOf builds an *Error of the given kind with message msg.
func errorOf(kind error, key, rev, msg string) *Error {
	k, ok := kinds()[kind]
	if !ok {
		k = kinds()[ErrInternal]
		kind = ErrInternal
	}
	return &Error{Num: k.Num, Code: k.Name, Message: msg, Key: key, Rev: rev, kind: kind}
}

// notFound is the error of a read of document id that finds none, made
// without fmt: an edge worker's first answer may be this one, and what it
// runs first is compiled first.
func notFound(id string) *Error {
	return errorOf(ErrNotFound, id, "", "document "+strconv.Quote(id)+" not found")
}

// AsError converts any error into an *Error: an *Error found in its chain is
// returned as it is, a known sentinel gets its number, and anything else
// becomes an internal error that keeps the original text.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	for kind := range kinds() {
		if errors.Is(err, kind) {
			e = newError(kind, "", "", "%s", err.Error())
			e.cause = err
			return e
		}
	}
	e = newError(ErrInternal, "", "", "%s", err.Error())
	e.cause = err
	return e
}
