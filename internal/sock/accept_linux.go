package sock

import "golang.org/x/sys/unix"

// AcceptConnErrno reports the per-connection accept errors only Linux has:
// ENONET is in accept(2)'s list of network errors to retry after.
func AcceptConnErrno(en unix.Errno) bool { return en == unix.ENONET }

// AcceptInheritsNoDelay: an accepted socket starts as a copy of the
// listener's TCP state (sk_clone_lock), TCP_NODELAY included, so aio's
// Listen sets it once on the listener instead of once per accepted
// connection. A listener checks the first socket it accepts
// (Listener.inheritsNoDelay): a kernel that only looks like Linux (gVisor)
// may not copy it.
const AcceptInheritsNoDelay = true
