package core

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
