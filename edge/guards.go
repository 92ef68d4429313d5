package main

import (
	"strconv"
	"strings"

	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/internal/jsontext"
	"github.com/tidwall/gjson"
)

// The rules the sync server's HTTP doors keep hold here too: a body
// escaping a lone UTF-16 surrogate is refused (two different strings would
// decode as one), a document with a repeated top-level member is refused
// (readers disagree on which copy counts), and a multi-document read names
// each document once, at most maxBatch of them, in a reply within
// maxReplyBytes.

const (
	// maxBatch bounds the items of one request, as the server's -max-batch.
	maxBatch = 10000
	// maxReplyBytes bounds the documents of one multi-document reply, as
	// the server's reply bound; one document may pass it alone.
	maxReplyBytes = maxBodyBytes
)

// checkBody refuses a body with a lone surrogate, and a write's documents
// (one object, or each object of an array) with a repeated top-level
// member.
func checkBody(r *request, write bool) *response {
	if jsontext.HasLoneSurrogate(r.body) {
		return errorResponse(errcode.BadRequest, "the body escapes a lone UTF-16 surrogate (\\ud800 to \\udfff without its pair); it has no UTF-8 form")
	}
	if !write || len(r.body) == 0 {
		return nil
	}
	v := gjson.ParseBytes(r.body)
	docs := []gjson.Result{v}
	if v.IsArray() {
		docs = v.Array()
	}
	for i, d := range docs {
		if name, ok := repeatedMember(d); ok {
			msg := "document has the member " + strconv.Quote(truncate(name, 100)) + " more than once"
			if v.IsArray() {
				msg = "document " + strconv.Itoa(i) + " has the member " + strconv.Quote(truncate(name, 100)) + " more than once"
			}
			return errorResponse(errcode.BadDocument, msg)
		}
	}
	return nil
}

// repeatedMember returns a top-level member name the object d has more
// than once (names compared unescaped).
func repeatedMember(d gjson.Result) (string, bool) {
	if !d.IsObject() {
		return "", false
	}
	seen := map[string]bool{}
	dup, found := "", false
	d.ForEach(func(k, _ gjson.Result) bool {
		if seen[k.String()] {
			dup, found = k.String(), true
			return false
		}
		seen[k.String()] = true
		return true
	})
	return dup, found
}

// checkSelectors refuses a multi-document read of coll past maxBatch items
// or naming one document twice (by key or by id).
func checkSelectors(coll string, sels []string) *response {
	if len(sels) > maxBatch {
		return errorResponse(errcode.BatchTooBig, "a request may carry at most "+strconv.Itoa(maxBatch)+" items; got "+strconv.Itoa(len(sels)))
	}
	seen := make(map[string]bool, len(sels))
	for _, s := range sels {
		if s == "" {
			continue
		}
		s = strings.TrimPrefix(s, coll+"/")
		if seen[s] {
			return errorResponse(errcode.BadRequest, "the keys list "+strconv.Quote(truncate(s, 100))+" more than once; ask for each document once")
		}
		seen[s] = true
	}
	return nil
}
