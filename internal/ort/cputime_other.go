//go:build cgo && !linux

package ort

import "time"

// threadCPUTime has no implementation outside Linux: ok is false.
func threadCPUTime() (time.Duration, bool) { return 0, false }
