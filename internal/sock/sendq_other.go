//go:build !linux

package sock

import "errors"

// SendQueueSupported says SendQueue works here: Linux only (darwin's
// SO_NWRITE and the BSDs' FIONWRITE would tell the same, but are untried).
const SendQueueSupported = false

// SendQueue is Linux's only (see sendq_linux.go).
func SendQueue(fd int) (int, error) { return 0, errors.ErrUnsupported }
