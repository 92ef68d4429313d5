package ravendoor

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
)

// Register serves the RavenDB door of s on mux (a syncserver.Door).
func Register(s *syncserver.Server, mux *http.ServeMux) {
	(&door{server: s}).register(mux)
}

var _ syncserver.Door = Register

// door is the RavenDB door over one server.
type door struct {
	server
}

// server is what the door asks of the sync server.
type server interface {
	documents
	indexes
	ids
	guard
}

var _ server = (*syncserver.Server)(nil)

// documents are a database's documents: read, written, scanned and
// queried.
type documents interface {
	ReadDocs(db string, ids []string) ([]*syncserver.StoredDoc, error)
	WriteDocs(ctx context.Context, db string, ws []syncserver.DocWrite, atomic bool) ([]syncserver.DocResult, error)
	ScanDocs(db, idPrefix string, visit func(id string, doc json.RawMessage) bool) error
	FindDocs(db, idPrefix string, q *query.Query, total bool) (syncserver.FindResult, error)
}

// indexes are a database's index definitions, which every replica builds.
type indexes interface {
	Indexes(db string) ([]core.CollectionIndexes, error)
	DefineIndex(ctx context.Context, db, coll string, def core.IndexDef) (core.IndexDef, bool, error)
}

// ids are the server's HiLo ranges and identities, the numbers every
// door and the websocket share.
type ids interface {
	NextRange(ctx context.Context, db, tag, node string, last syncserver.LastLease) (syncserver.LeasedRange, error)
	HiloState(db, tag string) (hiMax int64, meta json.RawMessage, found bool, err error)
	RaiseHilo(ctx context.Context, db, tag string, want int64, meta json.RawMessage) (int64, error)
	NextIdentity(ctx context.Context, db, name string) (int64, error)
	SeedIdentity(ctx context.Context, db, name string, value int64, force bool) (int64, error)
	Identities(db string, max int) (map[string]int64, error)
	Tag() string
}

// guard is the one guard every door passes, and the server's limits and
// error codes.
type guard interface {
	Guard(name string, dbOf func(r *http.Request) string, fail syncserver.DoorErrors, readsBody bool, h func(w http.ResponseWriter, r *syncserver.Request)) http.HandlerFunc
	CheckBatch(n int) error
	CheckReply(size, n int) error
	ReplyBudget() int
	ErrorOf(err error) (errcode.Code, string)
	CountError(name string)
	CountRequest(door string)
}
