package core

import (
	"fmt"

	"github.com/hilodb/hilodb/core/naming"
)

// Reader reads documents from a store's items before a Store holds them:
// its get returns the value one of the store's keys (a Change's key) has,
// as package database's Stored reads it from a snapshot and a log. Get and
// Document answer as a Store holding those items would, errors included,
// so a program that must answer a first read before its store is loaded
// answers it the same.
//
// A Reader is safe for concurrent use when its get is.
type Reader struct {
	conv *naming.Conventions
	sep  string
	get  func(key string) (value string, ok bool, err error)
}

// NewReader returns a Reader over get. Of opts only Conventions and
// Separator are used: they name documents as in a Store opened with them.
func NewReader(opts Options, get func(key string) (value string, ok bool, err error)) *Reader {
	conv, sep := conventions(opts)
	return &Reader{conv: conv, sep: sep, get: get}
}

// GetString returns the document with the given id as Store.GetString does.
func (r *Reader) GetString(id string) (string, error) {
	doc, ok, err := r.get(docPrefix + id)
	if err != nil {
		return "", fmt.Errorf("get document: %w", err)
	}
	if !ok {
		return "", notFound(id)
	}
	return doc, nil
}

// Get returns the document with the given id as Store.Get does.
func (r *Reader) Get(id string) ([]byte, error) {
	doc, err := r.GetString(id)
	if err != nil {
		return nil, err
	}
	return []byte(doc), nil
}

// Document returns the document selector names in collection as
// Store.Document does.
func (r *Reader) Document(collection, selector string) ([]byte, error) {
	return document(r.conv, r.sep, collection, selector, r.GetString)
}
