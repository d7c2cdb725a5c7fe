//go:build darwin

package sock

import "golang.org/x/sys/unix"

// keepIdleOpt is the TCP option for the idle time before keep-alive probes
// (TCP_KEEPALIVE on macOS).
const keepIdleOpt = unix.TCP_KEEPALIVE
