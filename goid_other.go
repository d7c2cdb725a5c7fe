//go:build !amd64 && !arm64

package aio

import (
	"runtime"
	"strconv"
	"strings"
)

// getg returns an identity of the running goroutine. On architectures without an
// assembly getg it parses the goroutine id out of runtime.Stack: correct, but about
// a microsecond, so OnLoop is slow there.
func getg() uintptr {
	var buf [64]byte
	s := string(buf[:runtime.Stack(buf[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, _ := strconv.ParseUint(s, 10, 64)
	return uintptr(id)
}
