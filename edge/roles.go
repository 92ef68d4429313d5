package main

import (
	"github.com/hilodb/hilodb/errcode"
)

// Who may do what at the edge. The glue (auth.mjs) verifies a request's
// token and hands handle the role it grants in the request's database;
// refuse holds each request to it, as the sync server's doors hold theirs
// (docs/auth.md): read may read and query, write may also write, admin may
// also see the worker's status.
//
// The names and their order are package auth's (auth.Role). The edge does
// not import auth: its go-jose dependency, linked in for the role type
// alone, adds about 300 KB gzip to the worker.

// role is what a request may do in its database; each includes the ones
// below.
type role uint8

const (
	roleNone role = iota
	roleRead
	roleWrite
	roleAdmin
)

var roleNames = [...]string{"none", "read", "write", "admin"}

// String returns the role's name.
func (r role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "none"
}

// parseRole reads a role's name; anything else is roleNone.
func parseRole(s string) role {
	for i, n := range roleNames {
		if n == s {
			return role(i)
		}
	}
	return roleNone
}

// need returns the role r needs and what it is, for the refusal: admin
// for the worker's status, read for reads (GET, HEAD, a read of many,
// AQL cursors, the version, a path that is no route), write for the rest.
func need(r *request) (role, string) {
	rt, ok := parseRoute(r.method, r.path)
	switch {
	case !ok:
		return roleRead, "a request"
	case rt.kind == "status":
		return roleAdmin, "the worker's status"
	case rt.kind == "version", rt.kind == "cursor", r.method == "GET", r.method == "HEAD":
		return roleRead, "a read"
	case rt.kind == "arango" && rt.key == "" && r.method == "PUT" && onlyGet(r.query):
		return roleRead, "a read"
	}
	return roleWrite, "a write"
}

// onlyGet reports whether a query asks for a read of many (onlyget=true),
// as arango reads it.
func onlyGet(query string) bool {
	q, err := parseQuery(query)
	return err == nil && q.Get("onlyget") == "true"
}

// refuse answers r with 403 forbidden when have is below the role r
// needs, and with 401 unauthorized when have is none; nil when r may be
// served.
func refuse(r *request, have role) *response {
	if have == roleNone {
		return errorResponse(errcode.Unauthorized, "the token grants nothing in this database")
	}
	want, what := need(r)
	if have < want {
		return errorResponse(errcode.Forbidden, what+" needs a "+want.String()+" role; this token's is "+have.String())
	}
	return nil
}
