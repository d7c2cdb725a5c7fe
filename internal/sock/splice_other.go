//go:build !linux

package sock

import "golang.org/x/sys/unix"

// SpliceSupported says Splice and Pipe work here: splice(2) is Linux's.
const SpliceSupported = false

// PipeSize is what Pipe's pipes hold (see splice_linux.go).
const PipeSize = 0

// Pipe is Linux's only (see splice_linux.go): ENOSYS.
func Pipe() (r, w, size int, err error) { return -1, -1, 0, unix.ENOSYS }

// Splice is Linux's only (see splice_linux.go): ENOSYS.
func Splice(out, in, n int) (int, error) { return 0, unix.ENOSYS }
