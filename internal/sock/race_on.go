//go:build race

package sock

import (
	"runtime"
	"unsafe"
)

// RaceEnabled reports whether the race detector is on: here it is (this
// file's build tag). The root package's tests size their deep graphs by it
// too (deepN).
const RaceEnabled = true

// raceWritten and raceRead tell the race detector what a raw system call
// did to memory it cannot see: the kernel filling a read buffer, or copying
// out of a write buffer. golang.org/x/sys annotates its wrappers the same
// way; a raw call must not hide a callback that keeps the loop's read buffer
// past its return, or a buffer written while a Write still owns it. (Unlike
// x/sys, no happens-before edge is made through the fd: synchronisation goes
// through atomics, mutexes and channels, never through a file descriptor.)
func raceWritten(b []byte) {
	if len(b) > 0 {
		runtime.RaceWriteRange(unsafe.Pointer(&b[0]), len(b))
	}
}

func raceRead(b []byte) {
	if len(b) > 0 {
		runtime.RaceReadRange(unsafe.Pointer(&b[0]), len(b))
	}
}
