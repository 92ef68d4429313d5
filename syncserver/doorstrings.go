package syncserver

import (
	"net/http"
	"unicode/utf8"

	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/internal/jsontext"
)

// checkStrings refuses a door request whose path or query is not UTF-8, or
// whose body escapes a lone UTF-16 surrogate in any string, a member name
// or a value. Go's JSON decoder turns each lone surrogate into U+FFFD, so
// "lone/\ud800" and "lone/\udc00" would become one id, and a document's
// text would change on its way in; the websocket refuses such ids too.
func checkStrings(r *http.Request, body []byte) (errcode.Code, string) {
	if !utf8.ValidString(r.URL.Path) || !utf8.ValidString(r.URL.RawQuery) {
		return errcode.BadRequest, "the path is not UTF-8"
	}
	for k, vs := range r.URL.Query() {
		if !utf8.ValidString(k) {
			return errcode.BadRequest, "a query parameter's name is not UTF-8"
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return errcode.BadRequest, "the query parameter " + Quote(Truncate(k, 40)) + " is not UTF-8"
			}
		}
	}
	if jsontext.HasLoneSurrogate(body) {
		return errcode.BadRequest, "the body escapes a lone UTF-16 surrogate (\\ud800 to \\udfff without its pair); it has no UTF-8 form"
	}
	return errcode.Code{}, ""
}
