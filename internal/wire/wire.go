// Package wire holds the JSON shapes of sync protocol v1 (docs/protocol.md),
// shared by the sync server and the sync client so the two cannot drift.
package wire

import "github.com/hilodb/hilodb/errcode"

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

// Error codes and numbers of the sync layer, from the registry (package
// errcode): CodeX is the stable word, NumX its number. Document-layer
// errors use the codes of package core, from the same registry.
var (
	CodeBadJSON, NumBadJSON                       = errcode.BadJSON.Name, errcode.BadJSON.Num
	CodeBadRequest, NumBadRequest                 = errcode.BadRequest.Name, errcode.BadRequest.Num
	CodeUnknownOp, NumUnknownOp                   = errcode.UnknownOp.Name, errcode.UnknownOp.Num
	CodeHelloRequired, NumHelloRequired           = errcode.HelloRequired.Name, errcode.HelloRequired.Num
	CodeUnauthorized, NumUnauthorized             = errcode.Unauthorized.Name, errcode.Unauthorized.Num
	CodeRateLimited, NumRateLimited               = errcode.RateLimited.Name, errcode.RateLimited.Num
	CodeTooBig, NumTooBig                         = errcode.TooBig.Name, errcode.TooBig.Num
	CodeIllegalName, NumIllegalName               = errcode.IllegalName.Name, errcode.IllegalName.Num
	CodeInternal, NumInternal                     = errcode.Internal.Name, errcode.Internal.Num
	CodeNeedsServer, NumNeedsServer               = errcode.NeedsServer.Name, errcode.NeedsServer.Num
	CodeUnavailable, NumUnavailable               = errcode.Unavailable.Name, errcode.Unavailable.Num
	CodeOutOfKeys, NumOutOfKeys                   = errcode.OutOfKeys.Name, errcode.OutOfKeys.Num
	CodeBatchTooBig, NumBatchTooBig               = errcode.BatchTooBig.Name, errcode.BatchTooBig.Num
	CodeForbiddenOrigin, NumForbiddenOrigin       = errcode.ForbiddenOrigin.Name, errcode.ForbiddenOrigin.Num
	CodeDatabaseNotFound, NumDatabaseNotFound     = errcode.DatabaseNotFound.Name, errcode.DatabaseNotFound.Num
	CodeIdleTimeout, NumIdleTimeout               = errcode.IdleTimeout.Name, errcode.IdleTimeout.Num
	CodeTooDeep, NumTooDeep                       = errcode.TooDeep.Name, errcode.TooDeep.Num
	CodeForbiddenHost, NumForbiddenHost           = errcode.ForbiddenHost.Name, errcode.ForbiddenHost.Num
	CodeTooManyConnections, NumTooManyConnections = errcode.TooManyConnections.Name, errcode.TooManyConnections.Num
	CodeHelloTimeout, NumHelloTimeout             = errcode.HelloTimeout.Name, errcode.HelloTimeout.Num
	CodeServerBusy, NumServerBusy                 = errcode.ServerBusy.Name, errcode.ServerBusy.Num
	CodeReplyTooBig, NumReplyTooBig               = errcode.ReplyTooBig.Name, errcode.ReplyTooBig.Num
	CodeForbidden, NumForbidden                   = errcode.Forbidden.Name, errcode.Forbidden.Num
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
	// Pipeline says that a push's prevSeq is exact whatever its since (the
	// server's change sequence counts each write, and it answers a
	// connection's requests in order), so a client may send its next push
	// before the last is answered and still chain its checkpoint. A server
	// on etcd proves prevSeq from since and leaves it false.
	Pipeline bool `json:"pipeline,omitempty"`
}

// HiloNext asks for the next range of a HiLo tag.
type HiloNext struct {
	ID          int64  `json:"id"`
	Op          string `json:"op"`
	Tag         string `json:"tag"`
	LastSize    int64  `json:"lastSize"`
	LastMax     int64  `json:"lastMax"`
	LastRangeAt string `json:"lastRangeAt"`
	// Want asks for a range of at least this many numbers (a bulk write
	// about to take them), up to the largest range; 0 leaves the size to
	// the server's growth rule alone.
	Want int64 `json:"want,omitempty"`
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
