package arangodoor

import (
	"context"
	"net/http"
	"sync"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/internal/aqlcursor"
	"github.com/hilodb/hilodb/syncserver"
)

// Register serves the ArangoDB door of s on mux (a syncserver.Door).
func Register(s *syncserver.Server, mux *http.ServeMux) {
	(&door{server: s}).register(mux)
}

var _ syncserver.Door = Register

// door is the ArangoDB door over one server: the server's documents,
// collections and guard, and the door's own open cursors.
type door struct {
	server
	cursorsOnce sync.Once
	cursors     *aqlcursor.Table
}

// server is what the door asks of the sync server.
type server interface {
	documents
	collections
	databases
	guard
}

var _ server = (*syncserver.Server)(nil)

// documents are a database's documents: read, written, counted, queried,
// and their ids made.
type documents interface {
	ReadDocs(db string, ids []string) ([]*syncserver.StoredDoc, error)
	WriteDocs(ctx context.Context, db string, ws []syncserver.DocWrite, atomic bool) ([]syncserver.DocResult, error)
	RemoveDocs(ctx context.Context, db, idPrefix string) (int, error)
	CountDocs(db, idPrefix string, sel *query.Selector) (int, error)
	FindDocs(db, idPrefix string, q *query.Query, total bool) (syncserver.FindResult, error)
	NextNumber(ctx context.Context, db, tag string, want int) (int64, error)
	Tag() string
}

// collections are a database's collection and index definitions.
type collections interface {
	Collections(db string) ([]syncserver.CollectionDef, error)
	CollectionOf(db, coll string) (syncserver.CollectionDef, bool, error)
	DefineCollection(ctx context.Context, db string, def syncserver.CollectionDef) (syncserver.CollectionDef, bool, error)
	CollectionRevision(db, coll string) (string, error)
	CollectionProps(db, coll string, v any) error
	SetCollectionProps(ctx context.Context, db, coll string, v any) error
	DropCollection(ctx context.Context, db, coll string) error
	RenameCollection(ctx context.Context, db string, def syncserver.CollectionDef, to string) (syncserver.CollectionDef, error)
	Indexes(db string) ([]core.CollectionIndexes, error)
	DefineIndex(ctx context.Context, db, coll string, def core.IndexDef) (core.IndexDef, bool, error)
	DropIndex(ctx context.Context, db, coll, name string) error
}

// databases are the server's databases as wholes.
type databases interface {
	DatabaseExists(db string) bool
	Databases(max int) ([]string, error)
	CreateDatabase(ctx context.Context, db string) error
	DropDatabase(ctx context.Context, db string) error
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
}
