//go:build !linux

package sock

import "golang.org/x/sys/unix"

// AcceptConnErrno reports the per-connection accept errors only some
// systems have: none here (ENONET is Linux's).
func AcceptConnErrno(unix.Errno) bool { return false }

// AcceptInheritsNoDelay: not relied on elsewhere; every accepted socket gets
// TCP_NODELAY set on its own.
const AcceptInheritsNoDelay = false
