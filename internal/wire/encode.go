package wire

import "encoding/json"

// AppendString appends s to b as a JSON string. Hot paths build frames by
// hand with it; plain ASCII without quotes or backslashes (ids, revisions)
// is copied as it is, anything else goes through encoding/json.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
