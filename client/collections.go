package client

import (
	"context"
	"encoding/json"
	"fmt"
)

// CollectionDef is a collection definition the server keeps for its
// database (docs/protocol.md, collection.define): a name and its
// keyOptions as JSON.
type CollectionDef struct {
	Name       string          `json:"name"`
	KeyOptions json.RawMessage `json:"keyOptions,omitempty"`
}

type collectionDefine struct {
	ID         int64           `json:"id"`
	Op         string          `json:"op"`
	Name       string          `json:"name"`
	KeyOptions json.RawMessage `json:"keyOptions,omitempty"`
}

type collectionDefineReply struct {
	Collection CollectionDef `json:"collection"`
	Created    bool          `json:"created"`
}

type collectionList struct {
	ID int64  `json:"id"`
	Op string `json:"op"`
}

type collectionListReply struct {
	Collections []CollectionDef `json:"collections"`
}

// DefineCollection gives the server def for the connection's database. The
// first definition of a name wins: the reply is the server's definition,
// and created tells whether this call made it.
func (c *Client) DefineCollection(ctx context.Context, def CollectionDef) (CollectionDef, bool, error) {
	var reply collectionDefineReply
	err := c.call(ctx, func(id int64) any {
		return collectionDefine{ID: id, Op: "collection.define", Name: def.Name, KeyOptions: def.KeyOptions}
	}, &reply)
	if err != nil {
		return CollectionDef{}, false, fmt.Errorf("collection.define %s: %w", def.Name, err)
	}
	return reply.Collection, reply.Created, nil
}

// Collections returns every collection definition the server keeps for the
// connection's database, by name.
func (c *Client) Collections(ctx context.Context) ([]CollectionDef, error) {
	var reply collectionListReply
	err := c.call(ctx, func(id int64) any { return collectionList{ID: id, Op: "collection.list"} }, &reply)
	if err != nil {
		return nil, fmt.Errorf("collection.list: %w", err)
	}
	return reply.Collections, nil
}
