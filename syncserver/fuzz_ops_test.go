package syncserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/hilodb/hilodb/syncserver"
)

// span is a HiLo range a connection holds: numbers it may hand out.
type span struct{ conn, low, high int64 }

// opsModel is what the clients of one fuzz run were given, to check that
// nothing was handed out twice.
type opsModel struct {
	t      *testing.T
	held   map[string][]span  // tag → ranges held, cut by returns
	idents map[string]int64   // identity → last value handed out
	since  map[int]int64      // connection → last pull checkpoint
	leases map[int][]span     // connection → its leases, newest last
	revs   map[string][]int64 // document → seqs acknowledged
}

// FuzzOpSequence drives up to three interleaved connections of one server
// through sequences of hello, HiLo leases and returns (their own, another's,
// or made up), identity ops, pushes, pulls and gets, decoded from the fuzz
// input. It checks that every reply is well formed and that no number is
// handed out twice: no lease overlaps a range another connection still
// holds, and identities only go up.
func FuzzOpSequence(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 1, 0, 3, 2, 1, 4, 0, 0, 5, 1, 1, 6})
	f.Add([]byte{0, 0, 1, 0, 0, 1, 1, 0, 1, 0, 3, 5, 1, 1, 3, 0, 0, 1, 0})
	f.Add([]byte{0, 0, 2, 0, 1, 0, 7, 3, 9, 0, 8, 1, 0, 9, 2, 0, 10, 4})
	f.Add([]byte{0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 4, 3, 2, 1, 0, 3, 255, 255})
	srv, err := syncserver.New(syncserver.Config{DataDir: f.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxBatch: 8, MaxMessageBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close(context.Background()) })
	var run atomic.Int64
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 600 {
			return
		}
		db := fmt.Sprintf("f%d", run.Add(1)) // each run starts from nothing
		m := &opsModel{t: t, held: map[string][]span{}, idents: map[string]int64{}, since: map[int]int64{},
			leases: map[int][]span{}, revs: map[string][]int64{}}
		conns := make([]*syncserver.TestConn, 3)
		for i := range conns {
			conns[i] = syncserver.NewTestConn(srv)
			defer conns[i].Close()
		}
		next := func() int64 {
			if len(prog) == 0 {
				return 0
			}
			b := prog[0]
			prog = prog[1:]
			return int64(b)
		}
		for len(prog) > 0 {
			ci := int(next() % 3)
			frame := m.frame(ci, db, next(), next(), next())
			replies, _ := conns[ci].Handle(frame)
			if len(replies) != 1 {
				t.Fatalf("%d replies to %s", len(replies), frame)
			}
			m.check(ci, frame, replies[0])
		}
	})
}

var fuzzTags = []string{"orders", "users"}

// frame builds one request of connection ci from three fuzz bytes.
func (m *opsModel) frame(ci int, db string, op, a, b int64) []byte {
	tag := fuzzTags[a%2]
	doc := fmt.Sprintf("d/%d", a%4)
	switch op % 11 {
	case 0:
		return []byte(fmt.Sprintf(`{"id":1,"op":"hello","db":%q,"node":""}`, db))
	case 1:
		return []byte(fmt.Sprintf(`{"id":2,"op":"hilo.next","tag":%q,"lastSize":%d,"lastMax":0,"lastRangeAt":""}`, tag, b*3))
	case 2: // report the end of a range: its own, or anything
		last := b * 7
		if l := m.leases[ci]; len(l) > 0 && b%2 == 0 {
			last = l[len(l)-1].high
		}
		return []byte(fmt.Sprintf(`{"id":3,"op":"hilo.next","tag":%q,"lastSize":0,"lastMax":%d,"lastRangeAt":""}`, tag, last))
	case 3: // return: its own latest range, another's, or made up
		end, last := b*5+1, b
		src := m.leases[int(b)%3]
		if len(src) > 0 {
			r := src[len(src)-1]
			end, last = r.high, r.low-1+(b%5)
		}
		return []byte(fmt.Sprintf(`{"id":4,"op":"hilo.return","tag":%q,"end":%d,"last":%d}`, tag, end, min(last, end)))
	case 4:
		return []byte(fmt.Sprintf(`{"id":5,"op":"identity.next","name":%q}`, tag))
	case 5:
		return []byte(fmt.Sprintf(`{"id":6,"op":"identity.seed","name":%q,"value":%d,"force":%v}`, tag, b, a%3 == 0))
	case 6:
		return []byte(fmt.Sprintf(`{"id":7,"op":"identity.nextBatch","names":[%q,%q,%q]}`, tag, tag, fuzzTags[b%2]))
	case 7:
		base := ""
		if b%3 == 1 {
			base = fmt.Sprintf("_mAAAAAAAA%dX", b%4)
		}
		return []byte(fmt.Sprintf(`{"id":8,"op":"push","changes":[{"id":%q,"baseRev":%q,"rev":"_mAAAAAAAA%dX","doc":{"v":%d}},{"id":%q,"rev":"_mAAAAAAAB-Y","deleted":%v}]}`,
			doc, base, b%4+1, b, fmt.Sprintf("d/%d", b%4), b%2 == 0))
	case 8:
		return []byte(fmt.Sprintf(`{"id":9,"op":"pull","since":%d,"limit":%d}`, m.since[ci]+b%3-1, a%4))
	case 9:
		return []byte(fmt.Sprintf(`{"id":10,"op":"get","ids":[%q,%q]}`, doc, fmt.Sprintf("d/%d", b%5)))
	default:
		return []byte(`{"id":11,"op":"ping"}`)
	}
}

// check verifies one reply against the model and updates it.
func (m *opsModel) check(ci int, frame, reply []byte) {
	t := m.t
	var req struct {
		Op        string `json:"op"`
		Tag, Name string
		End, Last int64
	}
	json.Unmarshal(frame, &req)
	var r struct {
		ID     *int64 `json:"id"`
		OK     *bool  `json:"ok"`
		Low    int64  `json:"low"`
		High   int64  `json:"high"`
		Value  int64  `json:"value"`
		Values []int64
		Last   int64 `json:"last"`
		Error  *struct {
			Code string `json:"code"`
			Num  int    `json:"num"`
		} `json:"error"`
		Changes []struct{ Seq int64 }
	}
	if err := json.Unmarshal(reply, &r); err != nil || r.ID == nil || r.OK == nil {
		t.Fatalf("malformed reply %s to %s", reply, frame)
	}
	if !*r.OK {
		if r.Error == nil || r.Error.Code == "" || r.Error.Num == 0 {
			t.Fatalf("error reply without code and num: %s", reply)
		}
		if r.Error.Code == "internal" {
			t.Fatalf("internal error for %s: %s", frame, reply)
		}
		return
	}
	switch req.Op {
	case "hilo.next":
		if r.Low < 1 || r.High < r.Low {
			t.Fatalf("bad range %s", reply)
		}
		for _, h := range m.held[req.Tag] {
			if r.Low <= h.high && h.low <= r.High {
				t.Fatalf("lease %d-%d of %s to connection %d overlaps %d-%d held by connection %d", r.Low, r.High, req.Tag, ci, h.low, h.high, h.conn)
			}
		}
		s := span{conn: int64(ci), low: r.Low, high: r.High}
		m.held[req.Tag] = append(m.held[req.Tag], s)
		m.leases[ci] = append(m.leases[ci], s)
	case "hilo.return":
		// The connection gives up what it holds after last in the range
		// ending at end, whether or not the server takes it back.
		for i, h := range m.held[req.Tag] {
			if h.conn == int64(ci) && h.high == req.End && req.Last < h.high {
				m.held[req.Tag][i].high = max(req.Last, h.low-1)
			}
		}
	case "identity.next", "identity.seed":
		if req.Op == "identity.next" && r.Value <= m.idents[req.Name] {
			t.Fatalf("identity %s gave %d after %d", req.Name, r.Value, m.idents[req.Name])
		}
		if req.Op == "identity.seed" && r.Value < m.idents[req.Name] {
			t.Fatalf("identity %s lowered to %d below %d handed out", req.Name, r.Value, m.idents[req.Name])
		}
		m.idents[req.Name] = max(m.idents[req.Name], r.Value)
	case "identity.nextBatch":
		var names struct{ Names []string }
		json.Unmarshal(frame, &names)
		for i, v := range r.Values {
			if v <= m.idents[names.Names[i]] {
				t.Fatalf("identity %s gave %d after %d", names.Names[i], v, m.idents[names.Names[i]])
			}
			m.idents[names.Names[i]] = v
		}
	case "pull":
		prev := int64(0)
		for _, c := range r.Changes {
			if c.Seq <= prev {
				t.Fatalf("pull out of order: %s", reply)
			}
			prev = c.Seq
		}
		m.since[ci] = r.Last
	}
}
