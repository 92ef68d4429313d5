package wire

// Signed tokens on a live connection (docs/protocol.md, "Tokens that
// expire").
const (
	// OpAuth gives a live connection a fresh token, without a reconnect.
	OpAuth = "auth"
	// OpTokenExpiring is server-initiated (no id): the connection's token
	// expires at At; unless an auth op brings a fresh one, the connection is
	// closed with unauthorized then.
	OpTokenExpiring = "token_expiring"
)

// Auth carries a fresh token for the connection's database.
type Auth struct {
	ID    int64  `json:"id"`
	Op    string `json:"op"`
	Token string `json:"token"`
}

// AuthReply answers Auth with the role the fresh token grants.
type AuthReply struct {
	ID   int64  `json:"id"`
	OK   bool   `json:"ok"`
	Role string `json:"role"`
}

// TokenExpiring tells a client its token expires at At (RFC 3339).
type TokenExpiring struct {
	Op string `json:"op"`
	At string `json:"at"`
}
