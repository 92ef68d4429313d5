package syncserver

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/internal/wire"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// ClientCerts maps client certificates, by SHA-1 thumbprint (upper-case
// hex, as RavenDB shows them), to a role per database ("*": every
// database). The HTTP doors give a request made with a known certificate
// over TLS that role, as a RavenDB server does for the official clients'
// certificate authentication; no CA is involved, the thumbprint is the
// credential.
type ClientCerts map[string]map[string]auth.Role

// ParseClientCerts reads a -client-certs file:
//
//	{"A1B2…": {"shop": "write", "reports": "read"}}
//
// Thumbprints may be written in either case and with colons.
func ParseClientCerts(b []byte) (ClientCerts, error) {
	var raw map[string]map[string]string
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("parse client certificates: %w", err)
	}
	out := make(ClientCerts, len(raw))
	for tp, dbs := range raw {
		norm := strings.ToUpper(strings.ReplaceAll(tp, ":", ""))
		if b, err := hex.DecodeString(norm); err != nil || len(b) != sha1.Size {
			return nil, fmt.Errorf("parse client certificates: %q is not a SHA-1 thumbprint (40 hex digits)", tp)
		}
		roles := make(map[string]auth.Role, len(dbs))
		for db, name := range dbs {
			r, ok := auth.ParseRole(name)
			if !ok {
				return nil, fmt.Errorf("parse client certificates: %s: role %q: want read, write or admin", tp, name)
			}
			if db != "*" && !storage.ValidDBName(db) {
				return nil, fmt.Errorf("parse client certificates: %s: illegal database name %q", tp, db)
			}
			roles[db] = r
		}
		out[norm] = roles
	}
	if len(out) == 0 {
		return nil, errors.New("parse client certificates: no certificate listed")
	}
	return out, nil
}

// Thumbprint is a DER certificate's SHA-1 thumbprint as RavenDB shows it.
func Thumbprint(der []byte) string {
	sum := sha1.Sum(der)
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// authorizeRequest is authorizeAccess for an HTTP door's request: a known
// client certificate (Config.ClientCerts) gives its role in db; otherwise
// the request's token decides.
func (s *Server) authorizeRequest(db string, r *http.Request) (access, error) {
	if s.cfg.ClientCerts != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		tp := Thumbprint(r.TLS.PeerCertificates[0].Raw)
		if roles, ok := s.cfg.ClientCerts[tp]; ok {
			role, ok := roles[db]
			if !ok {
				role = roles["*"]
			}
			if role == auth.None {
				s.metrics.refused("no_role")
				s.log.Debug("certificate refused", "db", db, "thumbprint", tp, "reason", "no_role")
				return access{}, &protoError{code: wire.CodeUnauthorized, num: wire.NumUnauthorized,
					msg: "the client certificate grants nothing in database " + Quote(db)}
			}
			s.log.Debug("certificate accepted", "db", db, "thumbprint", tp, "role", role.String())
			return access{role: role}, nil
		}
	}
	return s.authorizeAccess(db, tokenOf(r), fromLoopback(r))
}
