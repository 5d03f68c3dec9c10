// Package atomicfile writes files so that a failure leaves no partial file
// behind: each file is written to a temporary file in its directory,
// synced, and renamed into place only when every file of the set has been
// written.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Set is a group of files written together: Add writes each to a
// temporary file, Commit renames them all into place in the order added,
// and Abort (safe after Commit) removes what Commit did not rename.
type Set struct {
	temps []string // temporary files not renamed yet
	paths []string // their destinations
}

// Add writes a file of the set: write receives the temporary file, which
// becomes path at Commit. path's directory must exist.
func (s *Set) Add(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	s.temps = append(s.temps, f.Name())
	s.paths = append(s.paths, path)
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Commit renames every file into place, in the order added.
func (s *Set) Commit() error {
	for len(s.temps) > 0 {
		if err := os.Rename(s.temps[0], s.paths[0]); err != nil {
			return err
		}
		s.temps, s.paths = s.temps[1:], s.paths[1:]
	}
	return nil
}

// Abort removes the temporary files that Commit has not renamed.
func (s *Set) Abort() {
	for _, t := range s.temps {
		os.Remove(t)
	}
	s.temps, s.paths = nil, nil
}

// Write writes one file atomically.
func Write(path string, write func(io.Writer) error) error {
	var s Set
	defer s.Abort()
	if err := s.Add(path, write); err != nil {
		return err
	}
	return s.Commit()
}
