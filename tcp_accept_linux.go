package aio

import "golang.org/x/sys/unix"

// connErrno reports the per-connection accept errors only Linux has: ENONET
// is in accept(2)'s list of network errors to retry after.
func connErrno(en unix.Errno) bool { return en == unix.ENONET }
