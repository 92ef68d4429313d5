package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The data file is buntdb's append-only log: each record is a RESP array
// ("*3\r\n$3\r\nset\r\n$<n>\r\n<key>\r\n$<n>\r\n<value>\r\n", "del", or
// "flushdb"). buntdb itself drops an unfinished record at the end of the file
// and refuses anything else it cannot parse with a bare "invalid database".
// This file reads the log on its own first, so that
//
//   - an unfinished last write (the process died while writing; no reply ever
//     depended on it, because replies wait for fsync) is cut off with a log
//     line saying how many bytes went, even when the file system padded it
//     with zero bytes, which buntdb would refuse;
//   - damage anywhere else is a *CorruptError naming the file and the offset,
//     and the server does not start: serving from a log with a hole could hand
//     out numbers again;
//   - Repair and Restore rebuild a data file and raise every counter past
//     anything that may have been handed out.
//
// Invariant the check relies on: stored values never contain a raw CR or LF
// byte (they are compact JSON or decimal numbers). A record cut off at the end
// of the file is therefore a prefix without CR or LF in its last value; a cut
// that contains one is damage, not a torn write.

// dataFileName is the name of the data file inside the data directory.
const dataFileName = "hilodb.db"

// DefaultBump is how far Repair and Restore raise each counter by default:
// one largest HiLo range (the server leases no larger one).
const DefaultBump = 1 << 20

// CorruptError reports a data file that is damaged somewhere other than in an
// unfinished last write. The server refuses to start on it; see Repair.
type CorruptError struct {
	Path   string // the data file
	Offset int64  // where the first unreadable record starts
	Size   int64  // the file's size
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("data file %s is damaged at byte %d of %d, so the server will not serve from it "+
		"(numbers recorded after the damage could be handed out again); run `hilodb-server repair -data %s` "+
		"to rebuild it and raise every counter, see docs/operations.md \"Recovery\"",
		e.Path, e.Offset, e.Size, filepath.Dir(e.Path))
}

var (
	errShort     = errors.New("record ends early")
	errBadRecord = errors.New("malformed record")
)

type record struct {
	off   int64
	parts []string
}

// parseRecord parses the record at the start of b and returns it with its
// length. It returns errShort when b ends inside a record that could still be
// valid, and errBadRecord when a byte is wrong.
func parseRecord(b []byte) (parts []string, n int, err error) {
	count, i, err := parseHeader(b, 0, '*')
	if err != nil {
		return nil, 0, err
	}
	if count < 1 || count > 8 {
		return nil, 0, errBadRecord
	}
	parts = make([]string, 0, count)
	for range count {
		size, j, err := parseHeader(b, i, '$')
		if err != nil {
			return nil, 0, err
		}
		if size > 1<<30 {
			return nil, 0, errBadRecord
		}
		if j+size+2 > len(b) {
			// Cut off: a torn write holds a prefix of a value (values never
			// contain CR or LF), perhaps followed by the CR that ends it.
			avail := b[j:]
			if bytes.ContainsAny(avail[:min(len(avail), size)], "\r\n") || (len(avail) > size && avail[size] != '\r') {
				return nil, 0, errBadRecord
			}
			return nil, 0, errShort
		}
		if b[j+size] != '\r' || b[j+size+1] != '\n' {
			return nil, 0, errBadRecord
		}
		parts = append(parts, string(b[j:j+size]))
		i = j + size + 2
	}
	if !validCommand(parts) {
		return nil, 0, errBadRecord
	}
	return parts, i, nil
}

// parseHeader reads "<mark><digits>\r\n" at b[i:] and returns the number and
// the offset after the line.
func parseHeader(b []byte, i int, mark byte) (int, int, error) {
	if i >= len(b) {
		return 0, 0, errShort
	}
	if b[i] != mark {
		return 0, 0, errBadRecord
	}
	n, j := 0, i+1
	for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
		if j-i > 10 {
			return 0, 0, errBadRecord
		}
		n = n*10 + int(b[j]-'0')
	}
	switch {
	case j == len(b):
		return 0, 0, errShort
	case j == i+1 || b[j] != '\r':
		return 0, 0, errBadRecord
	case j+1 == len(b):
		return 0, 0, errShort
	case b[j+1] != '\n':
		return 0, 0, errBadRecord
	}
	return n, j + 2, nil
}

func validCommand(parts []string) bool {
	switch lower(parts[0]) {
	case "set":
		if len(parts) == 3 {
			return true
		}
		if len(parts) != 5 {
			return false
		}
		if a := lower(parts[3]); a != "ex" && a != "ae" {
			return false
		}
		_, err := strconv.ParseInt(parts[4], 10, 64)
		return err == nil
	case "del":
		return len(parts) == 2
	case "flushdb":
		return len(parts) == 1
	}
	return false
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// scanResult is what a read of the whole log found.
type scanResult struct {
	records   []record
	validEnd  int64 // end of the last whole record (zero padding after it is harmless)
	torn      bool  // the file ends inside an unfinished record after validEnd
	corrupt   bool  // a record at validEnd is damaged
	marked    bool  // the log has commit marks
	markedEnd int64 // end of the last commit mark
	marks     int   // records up to and including the last commit mark
}

// scanLog reads every record of b.
func scanLog(b []byte) scanResult {
	var res scanResult
	off := 0
	for {
		for off < len(b) && b[off] == 0 {
			off++ // buntdb skips zero bytes between records
		}
		if off == len(b) {
			return res
		}
		parts, n, err := parseRecord(b[off:])
		if err == nil {
			res.records = append(res.records, record{off: int64(off), parts: parts})
			off += n
			res.validEnd = int64(off)
			if len(parts) >= 2 && parts[1] == commitKey && lower(parts[0]) == "set" {
				res.marked, res.markedEnd, res.marks = true, res.validEnd, len(res.records)
			}
			continue
		}
		// A torn write may be followed by zero padding from the file system.
		rest := bytes.TrimRight(b[off:], "\x00")
		if _, _, err := parseRecord(rest); errors.Is(err, errShort) {
			res.torn = true
		} else {
			res.corrupt = true
		}
		return res
	}
}

// prepareDataFile checks the data file at path before buntdb opens it: an
// unfinished last write is cut off (and logged), damage elsewhere is a
// *CorruptError.
func prepareDataFile(path string, log *slog.Logger) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read data file: %w", err)
	}
	res := scanLog(b)
	switch {
	case res.corrupt:
		return &CorruptError{Path: path, Offset: res.validEnd, Size: int64(len(b))}
	case res.marked && (res.torn || len(res.records) > res.marks):
		// Whole records after the last commit mark are the part of an
		// unfinished commit that reached the disk: keeping them would apply
		// half a transaction (a document without the counter that numbered
		// it, say).
		log.Warn("data file ends in an unfinished commit; cutting it off at the last commit mark (it was never acknowledged to any client)",
			"file", path, "offset", res.markedEnd, "bytesDropped", int64(len(b))-res.markedEnd,
			"wholeRecordsDropped", len(res.records)-res.marks)
		if err := truncateSync(path, res.markedEnd); err != nil {
			return fmt.Errorf("cut unfinished commit from %s: %w", path, err)
		}
	case res.torn:
		log.Warn("data file ends in an unfinished write; cutting it off (it was never acknowledged to any client)",
			"file", path, "offset", res.validEnd, "bytesDropped", int64(len(b))-res.validEnd)
		if err := truncateSync(path, res.validEnd); err != nil {
			return fmt.Errorf("cut unfinished write from %s: %w", path, err)
		}
	}
	return nil
}

func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// RepairReport says what Repair did.
type RepairReport struct {
	Path         string // the data file
	Damaged      bool   // damage was found (other than an unfinished last write)
	Torn         bool   // an unfinished last write was cut off
	Offset       int64  // where the damage starts
	BytesDropped int64  // bytes that could not be read as records
	Salvaged     int    // whole records found after the damage and kept
	Raised       int    // counters raised by the bump
	Kept         string // where the damaged original was moved
}

// String describes the report for an operator.
func (r *RepairReport) String() string {
	switch {
	case r.Damaged:
		return fmt.Sprintf("%s: damage at byte %d; %d bytes could not be read and were dropped; %d records after the damage were salvaged; "+
			"%d counters (HiLo Max, identities, node tags) were raised past anything that may have been handed out; the damaged file is kept as %s",
			r.Path, r.Offset, r.BytesDropped, r.Salvaged, r.Raised, r.Kept)
	case r.Torn:
		return fmt.Sprintf("%s: cut off an unfinished last write at byte %d (%d bytes, never acknowledged); nothing else was wrong", r.Path, r.Offset, r.BytesDropped)
	}
	return fmt.Sprintf("%s: no damage found; nothing changed", r.Path)
}

// keyMention finds counter keys in damaged bytes, so a HiLo tag or identity
// whose every record was damaged is still raised.
var keyMention = regexp.MustCompile(`(?:hilo|ident)/[A-Za-z][A-Za-z0-9_-]{0,63}/[^\x00-\x1f/|]{1,512}`)

// Repair rebuilds a damaged data file in dir. It keeps every record before
// the damage and every whole record found after it, raises each HiLo Max,
// identity and the node-tag counter to the highest value seen anywhere plus
// bump (so a number recorded only in the damaged bytes is not handed out
// again), moves the damaged file aside and writes the rebuilt one in its
// place. The server must not be running. A file that is only torn at its end
// is cut, without raising anything.
func Repair(dir string, bump int64) (*RepairReport, error) {
	if bump < 0 {
		return nil, errors.New("repair: bump must not be negative")
	}
	path := filepath.Join(dir, dataFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read data file: %w", err)
	}
	rep := &RepairReport{Path: path}
	res := scanLog(b)
	if res.torn {
		rep.Torn, rep.Offset, rep.BytesDropped = true, res.validEnd, int64(len(b))-res.validEnd
		if err := truncateSync(path, res.validEnd); err != nil {
			return nil, fmt.Errorf("cut unfinished write: %w", err)
		}
		return rep, nil
	}
	if !res.corrupt {
		return rep, nil
	}
	rep.Damaged, rep.Offset = true, res.validEnd
	records := res.records
	// Salvage whole records after the damage: try every '*' that starts a
	// line; what parses completely is kept.
	readable := res.validEnd
	for p := int(res.validEnd) + 1; p < len(b); {
		if b[p] != '*' || (b[p-1] != '\n' && b[p-1] != 0) {
			p++
			continue
		}
		parts, n, err := parseRecord(b[p:])
		if err != nil {
			p++
			continue
		}
		records = append(records, record{off: int64(p), parts: parts})
		rep.Salvaged++
		readable += int64(n)
		p += n
	}
	rep.BytesDropped = int64(len(b)) - readable
	state := replay(records)
	for _, k := range keyMention.FindAllString(string(b[res.validEnd:]), -1) {
		if _, ok := state.values[k]; !ok {
			state.raise(k, 0)
		}
	}
	rep.Raised = state.bump(bump)
	stamp := time.Now().UTC().Format("20060102T150405Z")
	rep.Kept = path + ".damaged-" + stamp
	if err := replaceDataFile(path, state.values, rep.Kept); err != nil {
		return nil, fmt.Errorf("repair: %w", err)
	}
	return rep, nil
}

// Restore installs a backup (as written by the server's /admin/backup) as the
// data file of dir, raising every counter by bump: a backup is older than
// the numbers handed out after it was taken, and those must not be handed out
// again. An existing data file is refused unless force is set; then it is
// moved aside. The server must not be running.
func Restore(backup, dir string, bump int64, force bool) (*RepairReport, error) {
	_, res, err := readBackup(backup, bump)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dir, dataFileName)
	rep := &RepairReport{Path: path}
	if _, err := os.Stat(path); err == nil {
		if !force {
			return nil, fmt.Errorf("restore: %s exists; move it away or pass -force (it is then kept beside as .replaced-…)", path)
		}
		rep.Kept = path + ".replaced-" + time.Now().UTC().Format("20060102T150405Z")
	}
	state := replay(res.records)
	rep.Raised = state.bump(bump)
	if err := replaceDataFile(path, state.values, rep.Kept); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return rep, nil
}

// readBackup reads and checks the backup file a restore raising counters by
// bump installs: its bytes and its records.
func readBackup(backup string, bump int64) ([]byte, scanResult, error) {
	if bump < 0 {
		return nil, scanResult{}, errors.New("restore: bump must not be negative")
	}
	b, err := os.ReadFile(backup)
	if err != nil {
		return nil, scanResult{}, fmt.Errorf("read backup: %w", err)
	}
	res := scanLog(b)
	if res.corrupt || res.torn {
		return nil, scanResult{}, fmt.Errorf("restore: backup %s is damaged at byte %d", backup, res.validEnd)
	}
	return b, res, nil
}

// logState is the key/value state a log replays to, with the highest value
// each counter ever had: counters only go up in normal use (hilo.return and
// a forced seed lower them, and raising past those is merely a gap).
type logState struct {
	values map[string]string
	peak   map[string]int64 // counter key → highest value seen
}

func isCounter(key string) bool {
	return hasPrefix(key, HiloPrefix) || hasPrefix(key, IdentPrefix) || key == NodeSeqKey || hasPrefix(key, SeqCounterPrefix) ||
		hasPrefix(key, SrvSeqPrefix)
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// CounterValue reads the value of a counter stored at key (a HiloDoc's
// Max, or a decimal); false when val is neither.
func CounterValue(key, val string) (int64, bool) {
	if hasPrefix(key, HiloPrefix) {
		var d HiloDoc
		if json.Unmarshal([]byte(val), &d) != nil {
			return 0, false
		}
		return d.Max, true
	}
	n, err := strconv.ParseInt(val, 10, 64)
	return n, err == nil
}

func replay(records []record) *logState {
	st := &logState{values: map[string]string{}, peak: map[string]int64{}}
	for _, r := range records {
		switch lower(r.parts[0]) {
		case "set":
			st.values[r.parts[1]] = r.parts[2]
			if isCounter(r.parts[1]) {
				if v, ok := CounterValue(r.parts[1], r.parts[2]); ok {
					st.raise(r.parts[1], v)
				}
			}
		case "del":
			delete(st.values, r.parts[1])
		case "flushdb":
			clear(st.values)
		}
	}
	return st
}

func (st *logState) raise(key string, v int64) {
	if cur, ok := st.peak[key]; !ok || v > cur {
		st.peak[key] = v
	}
	if _, ok := st.values[key]; !ok {
		st.values[key] = "0"
		if hasPrefix(key, HiloPrefix) {
			st.values[key] = `{"Max":0}`
		}
	}
}

// bump sets every counter to its peak plus n (at most 2^53−1) and returns how
// many there are.
func (st *logState) bump(n int64) int {
	for key, peak := range st.peak {
		v := min(peak+min(n, MaxSafeNumber), MaxSafeNumber)
		if hasPrefix(key, HiloPrefix) {
			// Low 0: no return of a range leased before is accepted.
			b, _ := json.Marshal(HiloDoc{Max: v})
			st.values[key] = string(b)
		} else {
			st.values[key] = strconv.FormatInt(v, 10)
		}
		if db, ok := strings.CutPrefix(key, SeqCounterPrefix); ok {
			// Documents may have rolled back: every client's checkpoint is
			// now below purgedSeq, which makes it resync from zero.
			st.values[PurgedKey(db)] = strconv.FormatInt(v, 10)
		}
	}
	return len(st.peak)
}

// replaceDataFile writes values as a fresh log next to path, makes it
// durable and renames it over path; the old file, if any, is first moved to
// keep (when keep is not empty).
func replaceDataFile(path string, values map[string]string, keep string) error {
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("create rebuilt file: %w", err)
	}
	if err := writeLog(f, values); err != nil {
		f.Close()
		return fmt.Errorf("write rebuilt file: %w", err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("sync rebuilt file: %w", err)
	}
	if keep != "" {
		if err := os.Rename(path, keep); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("keep old file: %w", err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("install rebuilt file: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

func writeLog(w io.Writer, values map[string]string) error {
	keys := make([]string, 0, len(values))
	for k := range values {
		if k != commitKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	// The commit mark last: everything before it is one finished commit.
	mark := values[commitKey]
	if mark == "" {
		mark = "0"
	}
	values[commitKey] = mark
	keys = append(keys, commitKey)
	var buf bytes.Buffer
	for _, k := range keys {
		v := values[k]
		fmt.Fprintf(&buf, "*3\r\n$3\r\nset\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(v), v)
		if buf.Len() > 1<<20 {
			if _, err := w.Write(buf.Bytes()); err != nil {
				return err
			}
			buf.Reset()
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open data directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync data directory: %w", err)
	}
	return nil
}

// CheckBackup verifies that the file at path is a whole, readable backup.
func CheckBackup(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read backup: %w", err)
	}
	if res := scanLog(b); res.corrupt || res.torn {
		return fmt.Errorf("backup %s is damaged or incomplete at byte %d of %d", path, res.validEnd, len(b))
	}
	return nil
}
