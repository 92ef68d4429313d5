package wire

import (
	"encoding/json"

	"github.com/hilodb/hilodb/errcode"
)

// Replication ops of protocol v1.
const (
	OpPush      = "push"
	OpPull      = "pull"
	OpSubscribe = "subscribe"
	OpGet       = "get"
	OpChanges   = "changes" // server-initiated, no id
)

// Replication error codes, from the registry (package errcode).
var (
	CodeConflict, NumConflict = errcode.Conflict.Name, errcode.Conflict.Num
	CodeBadDoc, NumBadDoc     = errcode.BadDocument.Name, errcode.BadDocument.Num
	CodeStaleRev, NumStaleRev = errcode.StaleRev.Name, errcode.StaleRev.Num
)

// PushItem is one write sent by a client: the document's new revision Rev,
// made on top of BaseRev (empty for a document the client believes new), and
// the document or a deletion.
type PushItem struct {
	ID      string          `json:"id"`
	BaseRev string          `json:"baseRev"`
	Rev     string          `json:"rev"`
	Doc     json.RawMessage `json:"doc,omitempty"`
	Deleted bool            `json:"deleted,omitempty"`
}

// Push sends a batch of writes. Since, when set, is the client's
// checkpoint: a server whose sequence has gaps (on etcd) answers PrevSeq
// equal to it only when it proved nothing else changed after it.
type Push struct {
	ID    int64  `json:"id"`
	Op    string `json:"op"`
	Since *int64 `json:"since,omitempty"`
	// Brief asks for a BriefPushReply instead of a PushReply.
	Brief bool `json:"brief,omitempty"`
	// SeqsFrom, with Brief, takes a BriefPushReplyFrom when the accepted
	// items' sequences follow one another.
	SeqsFrom bool       `json:"seqsFrom,omitempty"`
	Changes  []PushItem `json:"changes"`
}

// PushResult is the outcome of one PushItem, in the order sent.
type PushResult struct {
	ID      string          `json:"id"`
	OK      bool            `json:"ok"`
	Seq     int64           `json:"seq,omitempty"`
	Error   *Error          `json:"error,omitempty"`
	Current json.RawMessage `json:"current,omitempty"`
	// CurrentOmitted marks a conflict whose current version is not in
	// Current: it was sent with an earlier result of the same id, or the
	// reply reached the server's bound on bytes. The client learns it from
	// the change feed (or get).
	CurrentOmitted bool `json:"currentOmitted,omitempty"`
}

// PushReply answers Push. Last is the database's change sequence after
// this push. When PrevSeq is the client's checkpoint, every change after it
// up to Last is one of the client's own writes, so it may move its
// checkpoint to Last without pulling them back. On the single server
// PrevSeq is the sequence before the push (the sequence is contiguous); on
// etcd it is Push.Since when the server proved that, and Last otherwise.
type PushReply struct {
	ID      int64        `json:"id"`
	OK      bool         `json:"ok"`
	Results []PushResult `json:"results"`
	PrevSeq int64        `json:"prevSeq"`
	Last    int64        `json:"last"`
}

// BriefPushReply answers a Push that asked for it ("brief": true): Failed
// holds the results of the items not accepted, each with its place in the
// request; every other item was accepted, at the sequence Seqs gives in
// its place (Seqs has one number per item, 0 for one not accepted). A push
// of many documents that all go through is answered in a few bytes a
// document instead of a result object each.
type BriefPushReply struct {
	ID      int64        `json:"id"`
	OK      bool         `json:"ok"`
	Brief   bool         `json:"brief"`
	Failed  []FailedPush `json:"failed"`
	Seqs    []int64      `json:"seqs"`
	PrevSeq int64        `json:"prevSeq"`
	Last    int64        `json:"last"`
}

// BriefPushReplyFrom is BriefPushReply for a push that asked for it
// ("seqsFrom": true) when the accepted items' sequences follow one another
// in the order of the items: SeqsFrom is the first's, and the others' are
// the next ones, in order (a single server's sequence has no gaps), in
// place of a number per item.
type BriefPushReplyFrom struct {
	ID       int64        `json:"id"`
	OK       bool         `json:"ok"`
	Brief    bool         `json:"brief"`
	Failed   []FailedPush `json:"failed"`
	SeqsFrom int64        `json:"seqsFrom"`
	PrevSeq  int64        `json:"prevSeq"`
	Last     int64        `json:"last"`
}

// FailedPush is the result of an item a push did not accept, at index I of
// the request's changes.
type FailedPush struct {
	I int `json:"i"`
	PushResult
}

// Pull asks for changes after sequence Since.
type Pull struct {
	ID       int64  `json:"id"`
	Op       string `json:"op"`
	Since    int64  `json:"since"`
	Limit    int    `json:"limit"`
	MaxBytes int    `json:"maxBytes,omitempty"`
	// Collections asks for the database's collection definitions with
	// the last page (PullReply.Collections), which spares a pull to the
	// end a collection.list after it.
	Collections bool `json:"collections,omitempty"`
	// Indexes asks for the database's index definitions with the last
	// page (PullReply.Indexes), as index.list lists them.
	Indexes bool `json:"indexes,omitempty"`
}

// Change is the latest state of one document, at sequence Seq.
type Change struct {
	Seq     int64           `json:"seq"`
	ID      string          `json:"id"`
	Rev     string          `json:"rev"`
	Doc     json.RawMessage `json:"doc,omitempty"`
	Deleted bool            `json:"deleted,omitempty"`
	// Lost lists the pushed writes the server refused as conflicts against
	// this version (Rev won over them), oldest first; absent when there
	// were none. A newer version of the document starts with none.
	Lost []LostWrite `json:"lost,omitempty"`
	// DocHasRev, never sent, is set by a decoder that found Doc's
	// top-level _rev (its first) to be Rev.
	DocHasRev bool `json:"-"`
}

// LostWrite is a pushed write the server refused as a conflict against the
// version a Change carries: its revision (whose node tag names the client
// that made it), and its document (nil when left out for its size, or a
// deletion).
type LostWrite struct {
	Rev     string          `json:"rev"`
	Deleted bool            `json:"deleted,omitempty"`
	Doc     json.RawMessage `json:"doc,omitempty"`
}

// PullReply carries changes in sequence order. Last is the checkpoint to
// send next time; More says whether more changes are waiting. PurgedSeq is
// the highest sequence of a tombstone the server has compacted away: a client
// whose checkpoint is below it may have missed deletions and must resync.
// Collections, on the last page (More false) of a pull that asked for them,
// is the database's collection definitions as collection.list lists them:
// a JSON array, [] when there are none; nil otherwise (a server older than
// Pull.Collections never sends it).
type PullReply struct {
	ID          int64           `json:"id"`
	OK          bool            `json:"ok"`
	Changes     []Change        `json:"changes"`
	Last        int64           `json:"last"`
	More        bool            `json:"more"`
	PurgedSeq   int64           `json:"purgedSeq,omitempty"`
	Collections json.RawMessage `json:"collections,omitempty"`
	// Indexes is, like Collections, the database's index definitions as
	// index.list lists them, for a pull that asked for them.
	Indexes json.RawMessage `json:"indexes,omitempty"`
}

// Subscribe asks the server to stream changes after Since.
type Subscribe struct {
	ID    int64  `json:"id"`
	Op    string `json:"op"`
	Since int64  `json:"since"`
}

// ChangesMsg is a server-initiated batch of live changes.
type ChangesMsg struct {
	Op      string   `json:"op"`
	Changes []Change `json:"changes"`
	Last    int64    `json:"last"`
}

// Get asks for the current version of documents by id.
type Get struct {
	ID  int64    `json:"id"`
	Op  string   `json:"op"`
	IDs []string `json:"ids"`
}

// GetReply carries one Change per requested id, in order; Seq is 0 and Rev
// empty for an id the server has no version of.
type GetReply struct {
	ID   int64    `json:"id"`
	OK   bool     `json:"ok"`
	Docs []Change `json:"docs"`
}
