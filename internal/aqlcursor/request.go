package aqlcursor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
)

// ErrBadRequest is a cursor request that is malformed or asks for an
// option not served.
var ErrBadRequest = errors.New("bad cursor request")

// Request is a POST /_api/cursor body.
type Request struct {
	Query     string
	BindVars  map[string]json.RawMessage
	BatchSize int     // 0: the default
	Count     bool    // answer the number of results
	TTL       float64 // seconds a cursor lives idle; 0: the default
	FullCount bool    // options.fullCount: the matches before the last LIMIT
	stream    bool    // options.stream: no count
}

// Bounds of a request's members.
const (
	DefaultBatchSize = 1000
	MaxBatchSize     = 10000
)

// requestMembers are the body's members served; those in ignoredMembers
// change nothing in hilodb (a cache, a memory limit) and are accepted.
var ignoredMembers = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"cache": true, "memoryLimit": true, "allowDirtyRead": true}
})

// ignoredOptions are cursor options that change nothing here: hilodb
// answers from one store, plans are not shown, there is no profile.
// Both are made on first use, not at the program's start (an edge
// worker's first answer waits for every package's initialisation).
var ignoredOptions = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"stream": true, "maxRuntime": true, "maxPlans": true, "maxNumberOfPlans": true, "failOnWarning": true,
		"maxWarningCount": true, "satelliteSyncWait": true, "skipInaccessibleCollections": true,
		"intermediateCommitCount": true, "intermediateCommitSize": true, "maxTransactionSize": true,
		"fillBlockCache": true, "allowRetry": true, "allowDirtyReads": true, "optimizer": true, "profile": true,
		"spillOverThresholdMemoryUsage": true, "spillOverThresholdNumRows": true, "usePlanCache": true,
		"cache": true, "memoryLimit": true, "maxDNFConditionMembers": true, "maxNodesPerCallstack": true,
	}
})

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadRequest}, args...)...)
}

// ParseRequest reads a POST /_api/cursor body; a member not served fails
// with ErrBadRequest, never ignored silently.
func ParseRequest(body []byte) (Request, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return Request{}, badRequest("the body must be a JSON object: %v", err)
	}
	var r Request
	for k, v := range m {
		var err error
		switch k {
		case "query":
			if json.Unmarshal(v, &r.Query) != nil {
				err = badRequest("query must be a string")
			}
		case "bindVars":
			if !bytes.Equal(v, []byte("null")) && json.Unmarshal(v, &r.BindVars) != nil {
				err = badRequest("bindVars must be an object")
			}
		case "batchSize":
			var n float64
			if json.Unmarshal(v, &n) != nil || n < 1 || n != math.Trunc(n) {
				err = badRequest("batchSize must be a whole number from 1")
			}
			r.BatchSize = int(min(n, MaxBatchSize))
		case "count":
			if json.Unmarshal(v, &r.Count) != nil {
				err = badRequest("count must be true or false")
			}
		case "ttl":
			if json.Unmarshal(v, &r.TTL) != nil || r.TTL < 0 {
				err = badRequest("ttl must be a number of seconds")
			}
		case "options":
			err = r.options(v)
		default:
			if !ignoredMembers()[k] {
				err = badRequest("the member %q is not served (see docs/http.md)", k)
			}
		}
		if err != nil {
			return Request{}, err
		}
	}
	if r.Query == "" {
		return Request{}, badRequest("query is empty")
	}
	if r.BatchSize == 0 {
		r.BatchSize = DefaultBatchSize
	}
	if r.stream {
		r.Count = false
	}
	return r, nil
}

func (r *Request) options(v json.RawMessage) error {
	var o map[string]json.RawMessage
	if json.Unmarshal(v, &o) != nil {
		return badRequest("options must be an object")
	}
	for k, ov := range o {
		switch {
		case k == "fullCount":
			if json.Unmarshal(ov, &r.FullCount) != nil {
				return badRequest("options.fullCount must be true or false")
			}
		case k == "stream":
			// A streaming query has no count in ArangoDB: it is not known
			// up front. hilodb answers from its results all the same.
			if json.Unmarshal(ov, &r.stream) != nil {
				return badRequest("options.stream must be true or false")
			}
		case ignoredOptions()[k]:
		default:
			return badRequest("the option %q is not served (see docs/http.md)", k)
		}
	}
	return nil
}
