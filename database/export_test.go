package database

// MemStorage is a Storage in memory, for the tests and benchmarks: they
// measure the journal, not the disk.
type MemStorage struct{ Snap, Log []byte }

// Load implements Storage.
func (m *MemStorage) Load() ([]byte, []byte, error) { return m.Snap, m.Log, nil }

// Append implements Storage.
func (m *MemStorage) Append(b []byte) error { m.Log = append(m.Log, b...); return nil }

// Compact implements Storage.
func (m *MemStorage) Compact(b []byte) error {
	m.Snap, m.Log = append([]byte(nil), b...), nil
	return nil
}
