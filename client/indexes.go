package client

import (
	"context"
	"fmt"

	"github.com/hilodb/hilodb/core"
)

type indexDefine struct {
	ID         int64         `json:"id"`
	Op         string        `json:"op"`
	Collection string        `json:"collection"`
	Index      core.IndexDef `json:"index"`
}

type indexDefineReply struct {
	Index   core.IndexDef `json:"index"`
	Created bool          `json:"created"`
}

type indexDrop struct {
	ID         int64  `json:"id"`
	Op         string `json:"op"`
	Collection string `json:"collection"`
	Name       string `json:"name"`
}

type indexDropReply struct {
	Dropped bool `json:"dropped"`
}

type indexList struct {
	ID int64  `json:"id"`
	Op string `json:"op"`
}

type indexListReply struct {
	Indexes []core.CollectionIndexes `json:"indexes"`
}

// DefineIndex gives the server an index definition of collection for the
// connection's database (docs/protocol.md, index.define). The first
// definition of a name, or of a list of fields, wins: the reply is the
// server's definition, and created tells whether this call made it.
func (c *Client) DefineIndex(ctx context.Context, collection string, def core.IndexDef) (core.IndexDef, bool, error) {
	var reply indexDefineReply
	err := c.call(ctx, func(id int64) any {
		return indexDefine{ID: id, Op: "index.define", Collection: collection, Index: def}
	}, &reply)
	if err != nil {
		return core.IndexDef{}, false, fmt.Errorf("index.define %s: %w", def.Name, err)
	}
	return reply.Index, reply.Created, nil
}

// DropIndex drops collection's index name on the server; dropped is false
// when it had none.
func (c *Client) DropIndex(ctx context.Context, collection, name string) (dropped bool, err error) {
	var reply indexDropReply
	err = c.call(ctx, func(id int64) any {
		return indexDrop{ID: id, Op: "index.drop", Collection: collection, Name: name}
	}, &reply)
	if err != nil {
		return false, fmt.Errorf("index.drop %s: %w", name, err)
	}
	return reply.Dropped, nil
}

// Indexes returns every index definition the server keeps for the
// connection's database, by collection.
func (c *Client) Indexes(ctx context.Context) ([]core.CollectionIndexes, error) {
	var reply indexListReply
	err := c.call(ctx, func(id int64) any { return indexList{ID: id, Op: "index.list"} }, &reply)
	if err != nil {
		return nil, fmt.Errorf("index.list: %w", err)
	}
	return reply.Indexes, nil
}
