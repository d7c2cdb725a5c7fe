//go:build darwin || openbsd

package poll

import "golang.org/x/sys/unix"

// keventPoll collects ready events without waiting: kevent with a zero
// timespec. Unlike on freebsd and netbsd it goes through the ordinary
// wrapper, scheduler bookkeeping included: darwin and openbsd only support
// system calls made through libc (openbsd kills a process that traps into
// the kernel from anywhere else), and x/sys offers no raw form of its libc
// calls, so RawSyscall6(SYS_KEVENT) is not an option.
func keventPoll(kq int, evs []unix.Kevent_t) (int, error) {
	var ts unix.Timespec
	return unix.Kevent(kq, nil, evs, &ts)
}
