package aio

import "golang.org/x/sys/unix"

// connErrno reports the per-connection accept errors only Linux has: ENONET
// is in accept(2)'s list of network errors to retry after.
func connErrno(en unix.Errno) bool { return en == unix.ENONET }

// acceptInheritsNoDelay: an accepted socket starts as a copy of the
// listener's TCP state (sk_clone_lock), TCP_NODELAY included, so Listen sets
// it once on the listener instead of once per accepted connection. A
// listener checks the first socket it accepts (Listener.inheritsNoDelay):
// a kernel that only looks like Linux (gVisor) may not copy it.
const acceptInheritsNoDelay = true
