package jsontext

// core's write path reads a caller's document once, with the scanner
// below, instead of checking it with encoding/json and walking it twice
// more with gjson: under WebAssembly each of those passes cost about as
// much as storing the document.

// maxJSONDepth is encoding/json's limit on nesting, which json.Valid
// enforces and the scanner copies.
const maxJSONDepth = 10000

// Members walks the members of the JSON object in b, checking the text as
// it goes with json.Valid's rules: after Next reports no more members, Bad
// says whether b was anything but one valid JSON object (with optional
// whitespace around it).
type Members struct {
	b     []byte
	i     int
	depth int  // containers open around the members (1 for a document)
	bad   bool // b is not one valid JSON object
	done  bool
	// loose is set once whitespace is seen between the object's own tokens
	// or around it: the object is not in compact form.
	loose bool
	// tail says that b goes on after the object (an element of an array):
	// the walk ends at its closing brace, and end is the index after it.
	tail bool
	end  int
}

// NewMembers starts walking the object in b, whose members are at nesting
// depth depth (1 for a top-level document).
func NewMembers(b []byte, depth int) Members {
	it := Members{b: b, depth: depth}
	it.i = it.ws(0)
	if it.i >= len(b) || b[it.i] != '{' {
		it.bad, it.done = true, true
		return it
	}
	it.i = it.ws(it.i + 1)
	if it.i < len(b) && b[it.i] == '}' {
		it.close()
	}
	return it
}

// NewElementMembers starts walking the object whose opening brace is b[i],
// an element of an array: what follows its closing brace is not its own,
// and End says where it ends.
func NewElementMembers(b []byte, i int) Members {
	it := Members{b: b, depth: 1, tail: true}
	it.i = it.ws(i + 1)
	if it.i < len(b) && b[it.i] == '}' {
		it.close()
	}
	return it
}

// ws skips whitespace from i, noting any it finds.
func (it *Members) ws(i int) int {
	j := skipSpace(it.b, i)
	if j != i {
		it.loose = true
	}
	return j
}

// close finishes the walk at the object's closing brace: only whitespace
// may follow it, unless the object is an element (tail).
func (it *Members) close() {
	it.done = true
	if it.tail {
		it.end = it.i + 1
		return
	}
	if it.ws(it.i+1) != len(it.b) {
		it.bad = true
	}
}

// Next returns the next member: its key with the quotes (esc when it holds
// an escape) and its value, exactly as written. ok is false once there are
// no more, or at the first error (Bad is then true).
func (it *Members) Next() (key, val []byte, esc, ok bool) {
	if it.done {
		return nil, nil, false, false
	}
	b := it.b
	start := it.i
	end, esc, good := scanString(b, start)
	if !good {
		return it.fail()
	}
	key = b[start:end]
	i := it.ws(end)
	if i >= len(b) || b[i] != ':' {
		return it.fail()
	}
	i = it.ws(i + 1)
	vend, good := skipValue(b, i, it.depth)
	if !good {
		return it.fail()
	}
	val = b[i:vend]
	i = it.ws(vend)
	switch {
	case i < len(b) && b[i] == ',':
		it.i = it.ws(i + 1)
		if it.i >= len(b) || b[it.i] != '"' {
			return it.fail()
		}
	case i < len(b) && b[i] == '}':
		it.i = i
		it.close()
	default:
		return it.fail()
	}
	return key, val, esc, true
}

// Bad reports whether the text is not one valid JSON object (for an
// element, whether the object is not valid), once Next has returned ok
// false.
func (it *Members) Bad() bool { return it.bad }

// Loose reports whether whitespace was seen between the object's own
// tokens or around it: the object is not in compact form.
func (it *Members) Loose() bool { return it.loose }

// End returns the index after the closing brace of an element's object
// (NewElementMembers), once Next has returned ok false without Bad.
func (it *Members) End() int { return it.end }

func (it *Members) fail() ([]byte, []byte, bool, bool) {
	it.bad, it.done = true, true
	return nil, nil, false, false
}

// scanString checks the JSON string starting at b[i] (a quote) and returns
// the index after its closing quote; esc says whether it holds an escape.
func scanString(b []byte, i int) (end int, esc, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false, false
	}
	for i++; ; {
		// Plain bytes a word at a time; then the byte that stopped it.
		if i = PlainRun(b, i); i >= len(b) {
			return 0, false, false
		}
		switch b[i] {
		case '"':
			return i + 1, esc, true
		case '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, false, false
				}
				i += 6
			default:
				return 0, false, false
			}
		default: // a control byte
			return 0, false, false
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber checks the JSON number starting at b[i] and returns the index
// after it.
func scanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	return i, true
}

// skipValue checks the JSON value starting at b[i], inside depth open
// containers, and returns the index after it.
func skipValue(b []byte, i, depth int) (int, bool) {
	var stackBuf [32]byte
	stack := stackBuf[:0] // the closing bracket of each open container
	for {
		// A value starts at i.
		if i >= len(b) {
			return 0, false
		}
		var ok bool
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth+len(stack)+1 > maxJSONDepth {
				return 0, false
			}
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			stack = append(stack, closer)
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == closer {
				i++
				stack = stack[:len(stack)-1]
				break
			}
			if c == '{' {
				if i, ok = memberStart(b, i); !ok {
					return 0, false
				}
			}
			continue
		case c == '"':
			if i, _, ok = scanString(b, i); !ok {
				return 0, false
			}
		case c == '-' || isDigit(c):
			if i, ok = scanNumber(b, i); !ok {
				return 0, false
			}
		case c == 't':
			if i, ok = literal(b, i, "true"); !ok {
				return 0, false
			}
		case c == 'f':
			if i, ok = literal(b, i, "false"); !ok {
				return 0, false
			}
		case c == 'n':
			if i, ok = literal(b, i, "null"); !ok {
				return 0, false
			}
		default:
			return 0, false
		}
		// A value ended at i: close containers until one goes on.
		for {
			if len(stack) == 0 {
				return i, true
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, false
			}
			top := stack[len(stack)-1]
			if b[i] == top {
				i++
				stack = stack[:len(stack)-1]
				continue
			}
			if b[i] != ',' {
				return 0, false
			}
			i = skipSpace(b, i+1)
			if top == '}' {
				if i, ok = memberStart(b, i); !ok {
					return 0, false
				}
			}
			break
		}
	}
}

// memberStart checks a member's key and colon at b[i] and returns where its
// value starts.
func memberStart(b []byte, i int) (int, bool) {
	i, _, ok := scanString(b, i)
	if !ok {
		return 0, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return skipSpace(b, i+1), true
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}
