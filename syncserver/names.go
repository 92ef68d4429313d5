package syncserver

import "unicode/utf8"

// validDBName accepts a letter, then letters, digits, _ or -, at most 64
// bytes: safe as a key part and never a path.
func validDBName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if i == 0 && !letter {
			return false
		}
		if !letter && !(c >= '0' && c <= '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// validNodeTag accepts 1 to 8 upper-case letters and digits.
func validNodeTag(s string) bool {
	if len(s) == 0 || len(s) > 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// maxTagLen bounds HiLo tags and identity names.
const maxTagLen = 512

// validTag accepts a HiLo tag or identity name: non-empty valid UTF-8 without
// control characters, '|' or the key separator '/' (a tag is the part before
// it), at most 512 bytes.
func validTag(s string) error {
	if len(s) == 0 || len(s) > maxTagLen || !utf8.ValidString(s) {
		return badRequest("tag must be 1 to %d bytes of UTF-8", maxTagLen)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '/' || r == '|' {
			return badRequest("tag %s: control characters, '/' and '|' are not allowed", quote(s))
		}
	}
	return nil
}
