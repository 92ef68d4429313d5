// Package errcode is the one registry of hilodb's error codes: every error
// that reaches a client — from the document store, the sync protocol, the
// browser build, the npm package or the edge worker — carries one of these
// codes, with its number and HTTP-style status. Numbers are ArangoDB's where
// the meaning matches, HTTP statuses for plain protocol errors, and 19xx for
// hilodb's own; no two codes share a number (the tests check that, and that
// js/index.d.ts and docs/protocol.md agree with this table).
package errcode

// Code is one error code.
type Code struct {
	Name   string // stable word, e.g. "illegal_key"
	Num    int    // unique number, e.g. 1221
	Status int    // HTTP-style status, e.g. 400
	Text   string // what it means
}

// The codes.
var (
	Internal            = Code{"internal", 4, 500, "a failure inside hilodb; see its log"}
	BadParameter        = Code{"bad_parameter", 10, 400, "a parameter out of range or of the wrong kind"}
	BadRequest          = Code{"bad_request", 400, 400, "a request of the wrong shape or types, or values out of range"}
	Unauthorized        = Code{"unauthorized", 401, 401, "a wrong or missing token"}
	ForbiddenOrigin     = Code{"forbidden_origin", 403, 403, "a browser origin the server does not allow"}
	UnknownOp           = Code{"unknown_op", 404, 404, "no such op"}
	MethodNotAllowed    = Code{"method_not_allowed", 405, 405, "an HTTP method the route does not take"}
	IdleTimeout         = Code{"idle_timeout", 408, 408, "nothing received for the idle time; the connection closes"}
	TooBig              = Code{"message_too_big", 413, 413, "a message over the size limit; the connection closes"}
	ForbiddenHost       = Code{"forbidden_host", 421, 421, "a Host header the server does not answer"}
	Locked              = Code{"locked", 423, 423, "the persisted store is open elsewhere"}
	RateLimited         = Code{"rate_limited", 429, 429, "too many requests on this connection; retry later"}
	Unavailable         = Code{"unavailable", 503, 503, "shutting down, or the storage failed"}
	Timeout             = Code{"timeout", 504, 504, "no answer in time"}
	BadJSON             = Code{"bad_json", 600, 400, "not JSON, not UTF-8, or not a JSON object"}
	Conflict            = Code{"conflict", 1200, 412, "the _rev does not match the stored document's"}
	MergeFailed         = Code{"merge_failed", 1201, 500, "the app's merge function failed; the server's version was kept"}
	NotFound            = Code{"not_found", 1202, 404, "no such document"}
	CollectionNotFound  = Code{"collection_not_found", 1203, 404, "no such collection"}
	DuplicateName       = Code{"duplicate_name", 1207, 409, "a collection of that name exists"}
	IllegalName         = Code{"illegal_name", 1208, 400, "an illegal collection or database name"}
	UniqueConstraint    = Code{"unique_constraint", 1210, 409, "a document with that key exists"}
	IllegalKey          = Code{"illegal_key", 1221, 400, "an illegal document key"}
	UnexpectedKey       = Code{"unexpected_key", 1222, 400, "a key given where the collection makes its own"}
	OutOfKeys           = Code{"out_of_keys", 1225, 500, "a HiLo tag or identity has no numbers left"}
	BadDocument         = Code{"bad_document", 1227, 400, "a pushed item with an invalid id, rev or document"}
	DatabaseNotFound    = Code{"database_not_found", 1228, 404, "a database the server does not serve; the connection closes"}
	InvalidKeyGenerator = Code{"invalid_key_generator", 1232, 400, "invalid keyOptions"}
	IndexNotFound       = Code{"index_not_found", 1212, 404, "no such index"}
	QueryParse          = Code{"query_parse", 1501, 400, "an AQL query outside hilodb's subset or malformed; the message names the position"}
	BindMissing         = Code{"bind_missing", 1551, 400, "a query's bind parameter without a value"}
	BindUnused          = Code{"bind_unused", 1552, 400, "a bind parameter the query does not use"}
	BindBadValue        = Code{"bind_bad_value", 1553, 400, "a bind parameter of the wrong kind (a collection's is a name)"}
	CursorNotFound      = Code{"cursor_not_found", 1600, 404, "no such cursor: fetched to its end, deleted, or past its ttl"}
	NeedsServer         = Code{"needs_server", 1900, 503, "the sync server is needed and cannot be reached"}
	HelloRequired       = Code{"hello_required", 1901, 400, "a request before hello"}
	Closed              = Code{"closed", 1902, 503, "the store was closed"}
	Rejected            = Code{"rejected", 1903, 422, "the server refused a local write; it stays pending"}
	TooDeep             = Code{"too_deep", 1904, 400, "JSON nested more than 128 levels"}
	BatchTooBig         = Code{"batch_too_big", 1905, 413, "more items in one request than the server's batch limit"}
	ReplyTooBig         = Code{"reply_too_big", 1906, 413, "a reply would pass the server's bound; ask for less"}
	Forbidden           = Code{"forbidden", 1907, 403, "an op the server does not allow"}
	HelloTimeout        = Code{"hello_timeout", 1908, 408, "no hello within the hello deadline; the connection closes"}
	ServerBusy          = Code{"server_busy", 1909, 503, "the server holds as many incoming bytes as it allows; the connection closes"}
	TooManyConnections  = Code{"too_many_connections", 1910, 503, "over the server's total or per-address connection limit"}
	UnknownPath         = Code{"unknown_path", 1911, 404, "no such route"}
	BadQuery            = Code{"bad_query", 1912, 400, "a query, selector or index definition that cannot run: an unknown operator, a malformed selector, a bad sort or cursor"}
	Damaged             = Code{"damaged", 1913, 500, "a persisted store's files were changed after they were written; see docs/operations.md"}
	StaleRev            = Code{"stale_rev", 1914, 409, "a pushed _rev not newer than the document's stored one, or too far ahead of the server's clock"}
	BodyTimeout         = Code{"body_timeout", 1915, 408, "an HTTP request body that did not arrive within the body deadline; the connection closes"}
)

// All is every code, in order of number.
var All = []Code{
	Internal, BadParameter, BadRequest, Unauthorized, ForbiddenOrigin, UnknownOp, MethodNotAllowed, IdleTimeout,
	TooBig, ForbiddenHost, Locked, RateLimited, Unavailable, Timeout, BadJSON, Conflict, MergeFailed, NotFound,
	CollectionNotFound, DuplicateName, IllegalName, UniqueConstraint, IndexNotFound, IllegalKey, UnexpectedKey, OutOfKeys, BadDocument,
	DatabaseNotFound, InvalidKeyGenerator, QueryParse, BindMissing, BindUnused, BindBadValue, CursorNotFound, NeedsServer, HelloRequired, Closed, Rejected, TooDeep, BatchTooBig, ReplyTooBig,
	Forbidden, HelloTimeout, ServerBusy, TooManyConnections, UnknownPath, BadQuery, Damaged, StaleRev, BodyTimeout,
}

// ByNum returns the code numbered num.
func ByNum(num int) (Code, bool) {
	for _, c := range All {
		if c.Num == num {
			return c, true
		}
	}
	return Code{}, false
}

// ByName returns the code named name.
func ByName(name string) (Code, bool) {
	for _, c := range All {
		if c.Name == name {
			return c, true
		}
	}
	return Code{}, false
}
