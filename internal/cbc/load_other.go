//go:build !(linux && (amd64 || arm64))

package cbc

import (
	"fmt"
	"runtime"
)

func load() (*Lib, error) {
	return nil, fmt.Errorf("cbc: the purego binding supports linux/amd64 and linux/arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
}
