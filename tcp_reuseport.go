package aio

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// reusePorts lists the addresses this process's listeners hold with
// SO_REUSEPORT (ListenConfig.ReusePort), each with how many hold it: the
// first listener of an address makes sure that nothing else listens there
// (portFree), as a listener without the option would fail to bind; the
// others, one per loop, join it. SO_REUSEPORT alone would let a second
// process of the same user bind the port too, silently, and take a share
// of the connections. Any goroutine, under mu.
var reusePorts struct {
	mu   sync.Mutex
	held map[netip.AddrPort]int
}

// listenReusePort is listenSocket for a listener with ReusePort (and not
// ReusePortAnyProcess): it refuses an address that a socket other than
// this process's listeners holds, and counts the listener in reusePorts
// (releaseReusePort takes it out).
func listenReusePort(ap netip.AddrPort, cfg ListenConfig) (int, netip.AddrPort, error) {
	reusePorts.mu.Lock()
	defer reusePorts.mu.Unlock()
	if ap.Port() != 0 && reusePorts.held[ap] == 0 { // port 0: the kernel picks a port nobody holds
		if err := portFree(ap); err != nil {
			return -1, ap, err
		}
	}
	fd, bound, err := listenSocket(ap, cfg)
	if err != nil {
		return -1, ap, err
	}
	holdReusePortLocked(bound)
	return fd, bound, nil
}

// holdReusePort counts in reusePorts a listener of this process bound to
// addr with SO_REUSEPORT that Listen did not make (AdoptListener).
func holdReusePort(addr netip.AddrPort) {
	reusePorts.mu.Lock()
	defer reusePorts.mu.Unlock()
	holdReusePortLocked(addr)
}

func holdReusePortLocked(addr netip.AddrPort) {
	if reusePorts.held == nil {
		reusePorts.held = make(map[netip.AddrPort]int)
	}
	reusePorts.held[addr]++
}

// releaseReusePort takes a closed listener of addr out of reusePorts.
func releaseReusePort(addr netip.AddrPort) {
	reusePorts.mu.Lock()
	defer reusePorts.mu.Unlock()
	if reusePorts.held[addr]--; reusePorts.held[addr] <= 0 {
		delete(reusePorts.held, addr)
	}
}

// portFree binds a socket without SO_REUSEPORT to ap, as the listener
// would bind it, and closes it: that fails (EADDRINUSE) while any socket
// listens there, with or without the option. SO_REUSEADDR, as the
// listener sets it, lets it bind past connections of an earlier server
// in TIME_WAIT. It narrows the window, it does not close it: another
// process may bind between this check and the listener's bind.
func portFree(ap netip.AddrPort) error {
	sa, family := sock.Sockaddr(ap)
	fd, err := sock.Socket(family)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fmt.Errorf("setsockopt SO_REUSEADDR: %w", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}
