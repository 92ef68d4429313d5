package query

import (
	"errors"
	"fmt"
)

// ErrBadQuery is the error every malformed query, selector, sort, cursor or
// index definition wraps: an unknown operator, an argument of the wrong
// kind, a limit out of range. It is never ignored silently.
var ErrBadQuery = errors.New("bad query")

// badQuery returns an error wrapping ErrBadQuery with a formatted message.
func badQuery(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadQuery}, args...)...)
}
