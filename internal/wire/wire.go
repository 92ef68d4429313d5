// Package wire holds the JSON shapes of sync protocol v1 (docs/protocol.md),
// shared by the sync server and the sync client so the two cannot drift.
package wire

// Ops of protocol v1.
const (
	OpHello        = "hello"
	OpHiloNext     = "hilo.next"
	OpHiloReturn   = "hilo.return"
	OpIdentityNext = "identity.next"
	OpIdentitySeed = "identity.seed"
	// OpIdentityNextBatch allocates several identities in one transaction.
	OpIdentityNextBatch = "identity.nextBatch"
	// OpPing does nothing but keep an idle connection open.
	OpPing = "ping"
)

// Stable error codes of the sync layer. Document-layer errors use the codes
// of package core.
const (
	CodeBadJSON       = "bad_json"
	CodeBadRequest    = "bad_request"
	CodeUnknownOp     = "unknown_op"
	CodeHelloRequired = "hello_required"
	CodeUnauthorized  = "unauthorized"
	CodeRateLimited   = "rate_limited"
	CodeTooBig        = "message_too_big"
	CodeIllegalName   = "illegal_name"
	CodeInternal      = "internal"
	CodeNeedsServer   = "needs_server"
	CodeBadHiloReturn = "bad_hilo_return"
	CodeUnavailable   = "unavailable"
	CodeOutOfKeys     = "out_of_keys"
	// CodeBatchTooBig refuses a request with more items than the server's
	// batch limit.
	CodeBatchTooBig = "batch_too_big"
	// CodeForbiddenOrigin refuses a browser whose Origin is not allowed.
	CodeForbiddenOrigin = "forbidden_origin"
	// CodeDatabaseNotFound refuses a database the server is not configured
	// to serve.
	CodeDatabaseNotFound = "database_not_found"
	// CodeIdleTimeout is sent before an idle connection is closed.
	CodeIdleTimeout = "idle_timeout"
	// CodeTooDeep refuses JSON nested deeper than the server accepts.
	CodeTooDeep = "too_deep"
	// CodeForbiddenHost refuses a request whose Host header names a host
	// the server does not answer (DNS rebinding).
	CodeForbiddenHost = "forbidden_host"
	// CodeTooManyConnections refuses a connection over the server's total
	// or per-address limit.
	CodeTooManyConnections = "too_many_connections"
	// CodeHelloTimeout closes a connection that did not complete hello in
	// time.
	CodeHelloTimeout = "hello_timeout"
	// CodeServerBusy closes a connection whose message would take the
	// server past its bound on buffered bytes.
	CodeServerBusy = "server_busy"
	// CodeReplyTooBig refuses a request whose reply would pass the
	// server's bound on reply bytes; ask for less.
	CodeReplyTooBig = "reply_too_big"
	// CodeForbidden refuses an op the server does not allow (lowering an
	// identity, say).
	CodeForbidden = "forbidden"
)

// Error numbers for the sync layer's own codes.
const (
	NumBadJSON          = 600
	NumBadRequest       = 400
	NumUnknownOp        = 404
	NumHelloRequired    = 1901
	NumUnauthorized     = 401
	NumRateLimited      = 429
	NumTooBig           = 413
	NumIllegalName      = 1208
	NumInternal         = 4
	NumNeedsServer      = 1900
	NumUnavailable      = 503
	NumOutOfKeys        = 1225
	NumBatchTooBig      = 413
	NumForbidden        = 403
	NumDatabaseNotFound = 1228
	NumIdleTimeout      = 408
	NumMisdirected      = 421
	NumReplyTooBig      = 413
)

// Error is the error object of a failed reply.
type Error struct {
	Code    string `json:"code"`
	Num     int    `json:"num"`
	Message string `json:"message"`
}

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Hello is the first request of every connection.
type Hello struct {
	ID    int64  `json:"id"`
	Op    string `json:"op"`
	DB    string `json:"db"`
	Token string `json:"token,omitempty"`
	Node  string `json:"node"`
}

// HelloReply answers Hello.
type HelloReply struct {
	ID        int64  `json:"id"`
	OK        bool   `json:"ok"`
	ServerTag string `json:"serverTag"`
	Node      string `json:"node"`
}

// HiloNext asks for the next range of a HiLo tag.
type HiloNext struct {
	ID          int64  `json:"id"`
	Op          string `json:"op"`
	Tag         string `json:"tag"`
	LastSize    int64  `json:"lastSize"`
	LastMax     int64  `json:"lastMax"`
	LastRangeAt string `json:"lastRangeAt"`
}

// HiloNextReply carries a leased range.
type HiloNextReply struct {
	ID          int64  `json:"id"`
	OK          bool   `json:"ok"`
	Prefix      string `json:"prefix"`
	Low         int64  `json:"low"`
	High        int64  `json:"high"`
	LastSize    int64  `json:"lastSize"`
	ServerTag   string `json:"serverTag"`
	LastRangeAt string `json:"lastRangeAt"`
}

// HiloReturn gives back the unused end of a range.
type HiloReturn struct {
	ID   int64  `json:"id"`
	Op   string `json:"op"`
	Tag  string `json:"tag"`
	End  int64  `json:"end"`
	Last int64  `json:"last"`
}

// OKReply is a reply with no result fields.
type OKReply struct {
	ID int64 `json:"id"`
	OK bool  `json:"ok"`
}

// ErrorReply is a failed reply.
type ErrorReply struct {
	ID    int64  `json:"id"`
	OK    bool   `json:"ok"`
	Error *Error `json:"error"`
}

// IdentityNext asks for the next value of an identity.
type IdentityNext struct {
	ID   int64  `json:"id"`
	Op   string `json:"op"`
	Name string `json:"name"`
}

// IdentitySeed sets an identity (raise-only unless Force).
type IdentitySeed struct {
	ID    int64  `json:"id"`
	Op    string `json:"op"`
	Name  string `json:"name"`
	Value int64  `json:"value"`
	Force bool   `json:"force"`
}

// IdentityReply carries an identity value.
type IdentityReply struct {
	ID    int64 `json:"id"`
	OK    bool  `json:"ok"`
	Value int64 `json:"value"`
}

// IdentityNextBatch asks for the next value of each name, in one
// transaction; a name given n times gets n successive values.
type IdentityNextBatch struct {
	ID    int64    `json:"id"`
	Op    string   `json:"op"`
	Names []string `json:"names"`
}

// IdentityBatchReply carries one value per requested name, in order.
type IdentityBatchReply struct {
	ID     int64   `json:"id"`
	OK     bool    `json:"ok"`
	Values []int64 `json:"values"`
}

// Ping keeps a connection from being closed as idle; the reply is an
// OKReply.
type Ping struct {
	ID int64  `json:"id"`
	Op string `json:"op"`
}

// TimeLayout is the layout of lastRangeAt: RFC 3339 UTC with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"
