//go:build linux && (amd64 || arm64)

package cbc

import (
	"errors"
	"strings"
	"testing"
)

// A library that is not installed gives the error users see when CBC is
// missing: it wraps ErrNotInstalled and says what to install.
func TestOpenMissing(t *testing.T) {
	_, _, err := open("libCbcSolverDoesNotExist.so.99")
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("open = %v, want ErrNotInstalled", err)
	}
	for _, want := range []string{"install Debian package coinor-libcbc3 (and coinor-libclp1) with apt-get", "libCbcSolverDoesNotExist.so.99", "/usr/lib/x86_64-linux-gnu"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
