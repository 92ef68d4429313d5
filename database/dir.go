package database

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Dir is the Storage (and Meta) of a directory on the host: files
// "snapshot", "log", "node" and "ranges", each fsynced before a method
// returns. One process at a time may use a directory.
type Dir struct {
	path string
	log  *os.File

	metaMu sync.Mutex
	ranges map[string][]byte
}

var _ Storage = (*Dir)(nil)

// OpenDir returns the Storage in directory path, creating it.
func OpenDir(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o750); err != nil {
		return nil, fmt.Errorf("create store directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(path, "log"), os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return &Dir{path: path, log: f}, nil
}

// Load implements Storage.
func (d *Dir) Load() ([]byte, []byte, error) {
	snap, err := os.ReadFile(filepath.Join(d.path, "snapshot"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read snapshot: %w", err)
	}
	log, err := os.ReadFile(d.log.Name())
	if err != nil {
		return nil, nil, fmt.Errorf("read log: %w", err)
	}
	return snap, log, nil
}

// Append implements Storage.
func (d *Dir) Append(frames []byte) error {
	if _, err := d.log.Write(frames); err != nil {
		return fmt.Errorf("write log: %w", err)
	}
	if err := d.log.Sync(); err != nil {
		return fmt.Errorf("sync log: %w", err)
	}
	return nil
}

// Compact implements Storage: the snapshot is written beside, made durable
// and renamed into place before the log is emptied.
func (d *Dir) Compact(snap []byte) error {
	tmp := filepath.Join(d.path, "snapshot.new")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("create snapshot: %w", err)
	}
	_, err = f.Write(snap)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(d.path, "snapshot")); err != nil {
		return fmt.Errorf("install snapshot: %w", err)
	}
	if err := syncDir(d.path); err != nil {
		return err
	}
	if err := d.log.Truncate(0); err != nil {
		return fmt.Errorf("empty log: %w", err)
	}
	if err := d.log.Sync(); err != nil {
		return fmt.Errorf("sync log: %w", err)
	}
	return nil
}

// Close closes the log file.
func (d *Dir) Close() error { return d.log.Close() }

func syncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}
