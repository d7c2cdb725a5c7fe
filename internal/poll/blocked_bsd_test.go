//go:build darwin || freebsd || netbsd || openbsd

package poll_test

import (
	"runtime"
	"strings"
	"time"
)

// lockThread does nothing here: blockedInWait looks for the goroutine, not
// its thread.
func lockThread() (tid int, unlock func()) { return 0, func() {} }

// blockedInWait reports whether a goroutine is seen within d in a system
// call made by Poller.Wait. These systems have no per-thread view of the
// system call a thread sleeps in, so this is the scheduler's: the state is
// set a few instructions before the thread enters the kernel.
func blockedInWait(_ int, d time.Duration) (bool, error) {
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(d)
	for {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, "[syscall") && strings.Contains(g, "poll.(*Poller).Wait") {
				return true, nil
			}
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(100 * time.Microsecond) // polling the scheduler's view: no event to wait on
	}
}
