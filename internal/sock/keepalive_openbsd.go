//go:build openbsd

package sock

import "time"

// setKeepAliveTimes does nothing: openbsd has no per-socket keep-alive
// timers (only the net.inet.tcp.keepidle sysctl).
func setKeepAliveTimes(int, time.Duration) error { return nil }
