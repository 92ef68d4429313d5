package syncserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/internal/wire"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// Who may do what. A request's role rides on its context, set by the door
// that authorized it (the websocket after hello, an HTTP door per
// request); each capability is checked where the server exercises it
// (WriteDocs, pushes, ranges, identities, definitions), so every door is
// held to the same rule. A context without a role is the server's own
// (Admin).

type roleKey struct{}

func withRole(ctx context.Context, r auth.Role) context.Context {
	return context.WithValue(ctx, roleKey{}, r)
}

func roleOf(ctx context.Context) auth.Role {
	if r, ok := ctx.Value(roleKey{}).(auth.Role); ok {
		return r
	}
	return auth.Admin
}

// NeedRole fails with forbidden when ctx's role is below need.
func NeedRole(ctx context.Context, need auth.Role, what string) error {
	if r := roleOf(ctx); r < need {
		return &protoError{code: wire.CodeForbidden, num: wire.NumForbidden,
			msg: what + " needs a " + need.String() + " role; this token's is " + r.String()}
	}
	return nil
}

// access is what an authorized client may do in one database.
type access struct {
	role  auth.Role
	grant *auth.Grant // a signed token's; nil for a static token or loopback
}

// hasTokens reports whether clients are judged by tokens (static or
// signed) rather than served on loopback alone.
func (s *Server) hasTokens() bool { return len(s.cfg.Tokens) > 0 || s.cfg.Verifier != nil }

// looksSigned reports whether token has a JWT's shape (three parts).
func looksSigned(token string) bool { return strings.Count(token, ".") == 2 }

// authorizeAccess checks a token for db: a static token (Config.Tokens)
// gives admin of its database; a signed token (Config.Verifier) what its
// claim grants; with neither configured, loopback clients are admins.
func (s *Server) authorizeAccess(db, token string, loopback bool) (access, error) {
	if s.dbs != nil && !s.dbs[db] {
		return access{}, &protoError{code: wire.CodeDatabaseNotFound, num: wire.NumDatabaseNotFound,
			msg: "database " + Quote(db) + " is not served here", close: websocket.StatusPolicyViolation}
	}
	v := s.cfg.Verifier
	if len(s.cfg.Tokens) == 0 && v == nil {
		if loopback {
			return access{role: auth.Admin}, nil
		}
		s.metrics.refused("no_tokens")
		return access{}, &protoError{code: wire.CodeUnauthorized, num: wire.NumUnauthorized,
			msg: "this server has no tokens configured and accepts loopback clients only", close: websocket.StatusPolicyViolation}
	}
	if want, ok := s.staticToken(db); ok && subtle.ConstantTimeCompare([]byte(want), []byte(token)) == 1 {
		return access{role: auth.Admin}, nil
	}
	if v != nil && looksSigned(token) {
		g, err := v.Verify(token)
		if err != nil {
			reason := "malformed"
			var ae *auth.Error
			if errors.As(err, &ae) {
				reason = ae.Reason
			}
			s.metrics.refused(reason)
			s.log.Debug("token refused", "db", db, "reason", reason)
			return access{}, &protoError{code: wire.CodeUnauthorized, num: wire.NumUnauthorized, msg: err.Error(), close: websocket.StatusPolicyViolation}
		}
		r := g.Role(db)
		if r == auth.None {
			s.metrics.refused("no_role")
			s.log.Debug("token refused", "db", db, "sub", g.Subject, "reason", "no_role")
			return access{}, &protoError{code: wire.CodeUnauthorized, num: wire.NumUnauthorized,
				msg: "the token grants nothing in database " + Quote(db), close: websocket.StatusPolicyViolation}
		}
		s.log.Debug("token accepted", "db", db, "sub", g.Subject, "role", r.String())
		return access{role: r, grant: g}, nil
	}
	s.metrics.refused("wrong_token")
	return access{}, &protoError{code: wire.CodeUnauthorized, num: wire.NumUnauthorized,
		msg: "wrong or missing token for database " + db, close: websocket.StatusPolicyViolation}
}

func (s *Server) staticToken(db string) (string, bool) {
	if len(s.cfg.Tokens) == 0 {
		return "", false
	}
	want, ok := s.cfg.Tokens[db]
	if !ok {
		want, ok = s.cfg.Tokens["*"]
	}
	return want, ok
}

// subjectDBPrefix counts the databases a subject made on first use:
// subdb/<subject>/<db> → when.
const subjectDBPrefix = "subdb/"

// touchDBFor is touchDB for a client with access a: a database its
// signed token names by {sub} that does not exist yet is made, up to
// Config.MaxDatabasesPerSubject of them per subject.
func (s *Server) touchDBFor(ctx context.Context, db string, a access) error {
	if a.grant == nil || !a.grant.Owns(db) {
		return s.touchDB(ctx, db)
	}
	exists := false
	_ = s.store.View(func(tx storage.Tx) error {
		_, err := tx.Get(storage.DBPrefix + db)
		exists = err == nil
		return nil
	})
	if exists {
		return nil
	}
	limit := s.cfg.MaxDatabasesPerSubject
	if limit <= 0 {
		limit = 16
	}
	sub := a.grant.Subject
	return s.store.Update(ctx, func(tx storage.Tx) error {
		if _, err := tx.Get(storage.DBPrefix + db); err == nil {
			return nil
		}
		n := 0
		prefix := subjectDBPrefix + sub + "/"
		tx.AscendRange("", prefix, prefix+"\xff", func(_, _ string) bool {
			n++
			return n < limit
		})
		if n >= limit {
			return &protoError{code: wire.CodeForbidden, num: wire.NumForbidden,
				msg: "subject " + Quote(Truncate(sub, 80)) + " has made " + itoa(limit) + " databases, the most one subject may"}
		}
		now := time.Now().UTC().Format(time.RFC3339)
		if _, _, err := tx.Set(prefix+db, now, nil); err != nil {
			return err
		}
		_, _, err := tx.Set(storage.DBPrefix+db, now, nil)
		return err
	})
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// tokenWarnAhead is how long before its signed token expires a connection
// is told so ({"op":"token_expiring"}); at expiry, if no auth op brought a
// fresh token, it is closed with unauthorized. A token that lives less than
// twice as long is warned of halfway through its life instead, so a client
// refreshing short-lived tokens is not told at once, again and again.
const tokenWarnAhead = 30 * time.Second

// warnAhead is how long before exp a connection is told its token expires.
func warnAhead(exp time.Time) time.Duration {
	return min(tokenWarnAhead, time.Until(exp)/2)
}

// watchExpiry arms the warning and the close for the connection's token;
// a later auth op disarms them (authGen) and arms its own.
func (c *conn) watchExpiry() {
	g := c.acc.grant
	if g == nil || g.Expiry.IsZero() {
		return
	}
	gen := c.authGen.Add(1)
	ctx := c.baseCtx
	exp := g.Expiry
	warn := time.AfterFunc(max(time.Until(exp)-warnAhead(exp), 0), func() {
		if c.authGen.Load() == gen {
			_ = c.send(ctx, wire.TokenExpiring{Op: wire.OpTokenExpiring, At: exp.UTC().Format(time.RFC3339)})
		}
	})
	end := time.AfterFunc(max(time.Until(exp), 0), func() {
		if c.authGen.Load() != gen {
			return
		}
		c.srv.metrics.refused("expired")
		c.sendError(ctx, 0, &protoError{code: wire.CodeUnauthorized, num: wire.NumUnauthorized,
			msg: "the token expired; connect again with a fresh one"})
		c.ws.Close(websocket.StatusPolicyViolation, wire.CodeUnauthorized)
	})
	c.srv.connsMu.Lock()
	old := c.expTimers
	c.expTimers = []*time.Timer{warn, end}
	first := old == nil
	c.srv.connsMu.Unlock()
	for _, t := range old {
		t.Stop()
	}
	if first {
		c.onClose(func() {
			c.srv.connsMu.Lock()
			ts := c.expTimers
			c.srv.connsMu.Unlock()
			for _, t := range ts {
				t.Stop()
			}
		})
	}
}

func init() { registerOp(wire.OpAuth, (*conn).authOp) }

// authOp takes a fresh token for the connection's database, without a
// reconnect: pending pushes and subscriptions go on. A token that does not
// verify, or grants nothing in the database, is refused and the
// connection keeps the one it had (until that one expires).
func (c *conn) authOp(ctx context.Context, id int64, data []byte) (any, error) {
	var req wire.Auth
	if err := decode(data, &req); err != nil {
		return nil, err
	}
	acc, err := c.srv.authorizeAccess(c.db, req.Token, c.loopback)
	if err != nil {
		var pe *protoError
		if errors.As(err, &pe) {
			keep := *pe
			keep.close = 0 // the old token still holds
			return nil, &keep
		}
		return nil, err
	}
	c.srv.connsMu.Lock()
	c.acc = acc
	c.srv.connsMu.Unlock()
	c.watchExpiry()
	return wire.AuthReply{ID: id, OK: true, Role: acc.role.String()}, nil
}
