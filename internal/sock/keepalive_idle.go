//go:build linux || freebsd || netbsd

package sock

import "golang.org/x/sys/unix"

// keepIdleOpt is the TCP option for the idle time before keep-alive probes.
const keepIdleOpt = unix.TCP_KEEPIDLE
