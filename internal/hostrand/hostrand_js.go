package hostrand

import (
	"sync"
	"syscall/js"
)

// Under WebAssembly the random bytes come from the host's
// crypto.getRandomValues (browsers, Node, workerd), as crypto/rand's do
// there, without crypto/rand: it brings its own generator, its ciphers and
// math/big into the browser build (about 150 KB, 43 KB compressed).
// Bytes are fetched 256 at a time, each handed out once.
var rnd struct {
	sync.Mutex
	buf  [256]byte
	left int // the unused bytes at the end of buf
	arr  js.Value
}

// Read fills b with random bytes from the host.
func Read(b []byte) {
	rnd.Lock()
	defer rnd.Unlock()
	for len(b) > 0 {
		if rnd.left == 0 {
			if rnd.arr.IsUndefined() {
				rnd.arr = js.Global().Get("Uint8Array").New(len(rnd.buf))
			}
			js.Global().Get("crypto").Call("getRandomValues", rnd.arr)
			js.CopyBytesToGo(rnd.buf[:], rnd.arr)
			rnd.left = len(rnd.buf)
		}
		n := copy(b, rnd.buf[len(rnd.buf)-rnd.left:])
		clear(rnd.buf[len(rnd.buf)-rnd.left : len(rnd.buf)-rnd.left+n])
		rnd.left -= n
		b = b[n:]
	}
}
