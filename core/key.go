package core

import (
	"fmt"
	"strings"
)

// MaxKeyLength is the longest legal document key in bytes.
const MaxKeyLength = 254

// MaxCollectionNameLength is the longest legal collection name in bytes.
const MaxCollectionNameLength = 256

// keyChars marks the bytes allowed in a document key: ASCII letters and
// digits and _ - . @ ( ) + , = ; $ ! * ' % :
var keyChars = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "_-.@()+,=;$!*'%:" {
		t[c] = true
	}
	return t
}()

// ValidateKey reports whether key is a legal document key: 1 to 254 bytes of
// ASCII letters, digits and _ - . @ ( ) + , = ; $ ! * ' % :. It returns an
// *Error with number 1221 that says which byte is wrong.
func ValidateKey(key string) error {
	if len(key) == 0 {
		return newError(ErrIllegalKey, key, "", "illegal document key: the key is empty")
	}
	if len(key) > MaxKeyLength {
		return newError(ErrIllegalKey, key, "", "illegal document key: %d bytes, at most %d allowed", len(key), MaxKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if !keyChars[key[i]] {
			return newError(ErrIllegalKey, key, "", "illegal document key %q: byte %q at offset %d is not allowed", key, key[i], i)
		}
	}
	return nil
}

// ValidateCollectionName reports whether name is a legal collection name: a
// letter, then letters, digits, _ or -, at most 256 bytes. It returns an
// *Error with number 1208.
func ValidateCollectionName(name string) error {
	if len(name) == 0 {
		return newError(ErrIllegalName, name, "", "illegal collection name: the name is empty")
	}
	if len(name) > MaxCollectionNameLength {
		return newError(ErrIllegalName, name, "", "illegal collection name: %d bytes, at most %d allowed", len(name), MaxCollectionNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if i == 0 && !letter {
			return newError(ErrIllegalName, name, "", "illegal collection name %q: it must start with a letter", name)
		}
		if !letter && !(c >= '0' && c <= '9') && c != '_' && c != '-' {
			return newError(ErrIllegalName, name, "", "illegal collection name %q: byte %q at offset %d is not allowed", name, c, i)
		}
	}
	return nil
}

// ParseID splits a document id into its prefix and its key at the last
// separator sep: "orders/1-A" → ("orders", "1-A"). The key is what ArangoDB
// calls _key and RavenDB's conventions call the value part. An id without
// the separator (a bare UUID, as RavenDB makes for an empty id) has an empty
// prefix and is its own key. The key must be a legal key; the prefix, when
// there is one, must be separator-joined segments of legal key bytes, so
// "a//b", "/x" and "x/" are rejected (1221).
func ParseID(id, sep string) (prefix, key string, err error) {
	if sep == "" {
		sep = "/"
	}
	if len(id) > MaxIDLength {
		return "", "", newError(ErrIllegalKey, id, "", "illegal document id: %d bytes, at most %d allowed", len(id), MaxIDLength)
	}
	i := lastIndex(id, sep)
	if i < 0 {
		if err := ValidateKey(id); err != nil {
			return "", "", err
		}
		return "", id, nil
	}
	prefix, key = id[:i], id[i+len(sep):]
	if err := ValidateKey(key); err != nil {
		return "", "", newError(ErrIllegalKey, id, "", "illegal document id %q: %s", id, err.(*Error).Message)
	}
	if err := validatePrefix(prefix, sep); err != nil {
		return "", "", newError(ErrIllegalKey, id, "", "illegal document id %q: %s", id, err.Error())
	}
	return prefix, key, nil
}

// MaxIDLength bounds a whole document id: a collection name, a separator and
// a key.
const MaxIDLength = MaxCollectionNameLength + 8 + MaxKeyLength

// validatePrefix checks an id prefix: segments of legal key bytes joined by
// sep, none of them empty.
func validatePrefix(prefix, sep string) error {
	if prefix == "" {
		return fmt.Errorf("the prefix before %q is empty", sep)
	}
	if len(sep) == 1 {
		return validatePrefixByte(prefix, sep[0])
	}
	return validatePrefixSplit(prefix, sep)
}

// validatePrefixByte is validatePrefix for a one-byte separator, in one walk
// over the bytes: every id a store writes goes through it, and under
// WebAssembly a page's first writes run in baseline code, where a search
// per segment costs more than the walk.
func validatePrefixByte(prefix string, sep byte) error {
	start := 0 // of the segment being walked
	for k := 0; k < len(prefix); k++ {
		switch c := prefix[k]; {
		case c == sep:
			if k == start {
				return fmt.Errorf("empty segment in prefix %q", prefix)
			}
			start = k + 1
		case !keyChars[c]:
			return fmt.Errorf("byte %q is not allowed in prefix %q", c, prefix)
		}
	}
	if start == len(prefix) {
		return fmt.Errorf("empty segment in prefix %q", prefix)
	}
	return nil
}

// validatePrefixSplit is validatePrefix for a separator of any length (and
// prefix not empty).
func validatePrefixSplit(prefix, sep string) error {
	start := 0
	for start <= len(prefix) {
		j := index(prefix[start:], sep)
		end := len(prefix)
		if j >= 0 {
			end = start + j
		}
		seg := prefix[start:end]
		if seg == "" {
			return fmt.Errorf("empty segment in prefix %q", prefix)
		}
		for k := 0; k < len(seg); k++ {
			if !keyChars[seg[k]] {
				return fmt.Errorf("byte %q is not allowed in prefix %q", seg[k], prefix)
			}
		}
		if j < 0 {
			break
		}
		start = end + len(sep)
	}
	return nil
}

func index(s, sep string) int     { return strings.Index(s, sep) }
func lastIndex(s, sep string) int { return strings.LastIndex(s, sep) }
