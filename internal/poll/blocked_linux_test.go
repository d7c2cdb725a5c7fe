package poll_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// lockThread locks the calling goroutine to its thread and returns the
// thread's id, for blockedInWait, and the function that unlocks it.
func lockThread() (tid int, unlock func()) {
	runtime.LockOSThread()
	return unix.Gettid(), runtime.UnlockOSThread
}

// blockedInWait reports whether thread tid is seen blocked in the kernel in
// epoll_pwait or epoll_pwait2 within d. /proc/self/task/<tid>/syscall names
// the system call a blocked thread sleeps in and reads "running" otherwise,
// so a match proves the thread is asleep in the poll, not about to enter it.
func blockedInWait(tid int, d time.Duration) (bool, error) {
	path := fmt.Sprintf("/proc/self/task/%d/syscall", tid)
	want := map[string]bool{
		strconv.Itoa(unix.SYS_EPOLL_PWAIT):  true,
		strconv.Itoa(unix.SYS_EPOLL_PWAIT2): true,
	}
	deadline := time.Now().Add(d)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err
		}
		if f := strings.Fields(string(b)); len(f) > 0 && want[f[0]] {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(100 * time.Microsecond) // polling the kernel's view: no event to wait on
	}
}
