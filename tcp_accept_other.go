//go:build !linux

package aio

import "golang.org/x/sys/unix"

// connErrno reports the per-connection accept errors only some systems have:
// none here (ENONET is Linux's).
func connErrno(unix.Errno) bool { return false }

// acceptInheritsNoDelay: not relied on elsewhere; every accepted socket gets
// TCP_NODELAY set on its own.
const acceptInheritsNoDelay = false
