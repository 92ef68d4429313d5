//go:build js && wasm

package main

import (
	"encoding/binary"
	"unsafe"
)

// writeSize is the write buffer's size: a put whose collection, document
// and receipt key take more UTF-8 bytes than this (less the header) passes
// them as strings (putText) instead.
const writeSize = 64 << 10

// writeBuffer is where index.js writes a put's strings as UTF-8 for putIn
// (calls.go), through the WebAssembly memory, instead of handing Go
// JavaScript strings: each of those costs a reference, a finalizer and two
// calls across the boundary to take in. It is allocated once and never
// moves, so JavaScript learns its address once (hilodbWriteInput).
// JavaScript's one thread writes it and then calls putIn, which copies what
// it needs before anything else can write it again.
type writeBuffer struct {
	buf []byte
}

var writes = &writeBuffer{buf: make([]byte, writeSize)}

// writeHeader is the size of the buffer's header: the lengths in bytes of
// the three strings after it, as little-endian uint32s, and four bytes
// unused.
const writeHeader = 16

// take returns the three strings laid end to end after the header: a
// collection, a document's JSON text (a copy: the buffer is written again
// by the next put) and a key.
func (w *writeBuffer) take() (coll string, text []byte, key string, err error) {
	b := w.buf
	collLen := int64(binary.LittleEndian.Uint32(b))
	textLen := int64(binary.LittleEndian.Uint32(b[4:]))
	keyLen := int64(binary.LittleEndian.Uint32(b[8:]))
	if writeHeader+collLen+textLen+keyLen > int64(len(b)) {
		return "", nil, "", &argError{"putIn: the lengths in the write buffer's header run past its end"}
	}
	b = b[writeHeader:]
	coll = string(b[:collLen])
	text = append([]byte(nil), b[collLen:collLen+textLen]...)
	key = string(b[collLen+textLen : collLen+textLen+keyLen])
	return coll, text, key, nil
}

// fastWriteInput returns the write buffer's address in the WebAssembly
// memory. It never changes, and it neither waits nor allocates.
//
//go:wasmexport hilodbWriteInput
func fastWriteInput() uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(writes.buf)))) }

// fastWriteInputSize returns the write buffer's size in bytes.
//
//go:wasmexport hilodbWriteInputSize
func fastWriteInputSize() int32 { return writeSize }
