package syncserver

import "github.com/hilodb/hilodb/syncserver/storage"

// CheckTag accepts a HiLo tag or identity name as storage.CheckTag does,
// refusing any other as a bad request.
func CheckTag(s string) error {
	if err := storage.CheckTag(s); err != nil {
		return BadRequest("%s", err.Error())
	}
	return nil
}
