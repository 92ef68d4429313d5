package storage

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Counter kinds SetCounter sets.
const (
	CounterHilo     = "hilo"
	CounterIdentity = "identity"
)

// counterSetting checks SetCounter's arguments and returns the key and the
// value to store.
func counterSetting(db, kind, name string, value int64) (key, val string, err error) {
	if !ValidDBName(db) {
		return "", "", fmt.Errorf("set counter: illegal database name %q", db)
	}
	if err := CheckTag(name); err != nil {
		return "", "", fmt.Errorf("set counter: %w", err)
	}
	if value < 0 || value > MaxSafeNumber {
		return "", "", fmt.Errorf("set counter: value must be between 0 and %d", int64(MaxSafeNumber))
	}
	switch kind {
	case CounterHilo:
		b, _ := json.Marshal(HiloDoc{Max: value, Top: value})
		return HiloKey(db, name), string(b), nil
	case CounterIdentity:
		return IdentityKey(db, name), strconv.FormatInt(value, 10), nil
	}
	return "", "", fmt.Errorf("set counter: kind must be %q or %q, not %q", CounterHilo, CounterIdentity, kind)
}

// SetCounter sets one counter of the data file in dir, with the server
// stopped: the HiLo tag name of database db (kind CounterHilo; its next
// lease starts after value) or the identity name (CounterIdentity; its next
// value is value+1). It is the operator's repair for a tag raised too far or
// an identity to be moved; lowering one can hand out numbers that were
// handed out before, so only lower what no client holds. The previous file
// is kept beside as hilodb.db.before-set-…; it returns the counter's value
// before.
func SetCounter(dir, db, kind, name string, value int64) (int64, error) {
	key, val, err := counterSetting(db, kind, name, value)
	if err != nil {
		return 0, err
	}
	path := filepath.Join(dir, dataFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read data file: %w", err)
	}
	res := scanLog(b)
	if res.corrupt || res.torn {
		return 0, fmt.Errorf("set counter: %s is damaged at byte %d; run `hilodb-server repair -data %s` first", path, res.validEnd, dir)
	}
	state := replay(res.records)
	var old int64
	if cur, ok := state.values[key]; ok {
		old, _ = CounterValue(key, cur)
	}
	state.values[key] = val
	keep := path + ".before-set-" + time.Now().UTC().Format("20060102T150405Z")
	if err := replaceDataFile(path, state.values, keep); err != nil {
		return 0, fmt.Errorf("set counter: %w", err)
	}
	return old, nil
}
