package main

import (
	"context"
	"sync"
	"time"
)

// maxLooked bounds how many collection names without a definition an app
// remembers having looked for: past it, a write to another such name of
// the short form looks again, which costs a pull, not memory.
const maxLooked = 4096

// collectionLooks is what an app asked the server of collections its
// replica has no definition of. The live feed carries documents, not
// definitions, so a collection defined on the server after the replica
// started is learned by a pull. Pulls made to look are one at a time, and
// a request waiting for one is answered by any pull that began after it
// asked.
type collectionLooks struct {
	mu       sync.Mutex
	began    time.Time // when the last pull made to look began
	reached  bool      // whether it reached the server
	failedAt time.Time // when a pull made to look last failed
	looked   map[string]bool
}

// collectionExists reports whether coll exists in the replica as it does
// on the sync server: it has a definition, or it holds documents (hilodb's
// own API makes collections implicitly).
func (a *app) collectionExists(coll string) bool {
	if _, ok := a.store.CollectionInfo(coll); ok {
		return true
	}
	page, err := a.store.List(coll, "", 1)
	return err == nil && len(page.Docs) > 0
}

// lookForCollection reports whether coll exists (collectionExists),
// pulling from the server (at most pullWait) when it does not exist here
// yet, and whether the server answered that pull (true when none was
// needed).
func (a *app) lookForCollection(ctx context.Context, coll string) (exists, reached bool) {
	if a.collectionExists(coll) {
		return true, true
	}
	reached = a.pullToLook(ctx)
	return a.collectionExists(coll), reached
}

// pullToLook pulls from the server, at most pullWait, to learn the
// definitions made there, and reports whether the server answered. A call
// waiting for another's pull that began after it was made takes that
// pull's answer; after a failed pull, calls for retryPull answer false at
// once.
func (a *app) pullToLook(ctx context.Context) bool {
	asked := time.Now()
	l := &a.looks
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.began.After(asked) {
		return l.reached
	}
	if !l.failedAt.IsZero() && time.Since(l.failedAt) < retryPull {
		return false
	}
	l.began = time.Now()
	pctx, cancel := context.WithTimeout(ctx, pullWait)
	_, err := a.db.Replicator().Pull(pctx)
	cancel()
	l.reached = err == nil
	if err != nil {
		l.failedAt = time.Now()
		return false
	}
	l.failedAt = time.Time{}
	return true
}

// learnCollection is the short form's look before a write: hilodb's own
// API keeps implicit collections, so a collection without a definition is
// written as one with the default keys, but a definition the server has
// must be known before a key is made for it. A name is looked for on the
// server once while it is reached.
func (a *app) learnCollection(ctx context.Context, coll string) {
	l := &a.looks
	l.mu.Lock()
	done := l.looked[coll]
	l.mu.Unlock()
	if done {
		return
	}
	if _, ok := a.store.CollectionInfo(coll); ok {
		return
	}
	if !a.pullToLook(ctx) {
		return // offline: the collection's keys are made as defined here; look again next time
	}
	l.mu.Lock()
	if l.looked == nil {
		l.looked = make(map[string]bool)
	}
	if len(l.looked) < maxLooked {
		l.looked[coll] = true
	}
	l.mu.Unlock()
}
