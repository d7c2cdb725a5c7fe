//go:build !amd64 && !arm64

package goid

import (
	"runtime"
	"strconv"
	"strings"
)

// Get returns an identity of the running goroutine. On architectures without an
// assembly Get it parses the goroutine id out of runtime.Stack: correct, but about
// a microsecond, so OnLoop is slow there.
func Get() uintptr {
	var buf [64]byte
	s := string(buf[:runtime.Stack(buf[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, _ := strconv.ParseUint(s, 10, 64)
	return uintptr(id)
}
