package aio

import (
	"fmt"
	"net/netip"
	"strconv"
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

// listenReusePort is listenSocket for a listener with ReusePort: unless
// ReusePortAnyProcess, it refuses an address that a socket other than
// this process's listeners holds; either way it counts the listener in
// reusePorts (releaseReusePort takes it out).
func listenReusePort(ap netip.AddrPort, cfg ListenConfig) (int, netip.AddrPort, error) {
	reusePorts.mu.Lock()
	defer reusePorts.mu.Unlock()
	// port 0: the kernel picks a port nobody holds
	if ap.Port() != 0 && !cfg.ReusePortAnyProcess && reusePorts.held[reuseKey(ap)] == 0 {
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
	reusePorts.held[reuseKey(addr)]++
}

// reuseKey is addr as the kernel reports a socket bound to it: the zone
// of an address that is not link-local is dropped (the kernel ignores
// it), and a numeric zone is written without leading zeros, so that the
// address Listen is given and the one it bound count as one.
func reuseKey(addr netip.AddrPort) netip.AddrPort {
	ip := addr.Addr()
	if z := ip.Zone(); z != "" {
		id, _ := strconv.ParseUint(z, 10, 32)
		if id == 0 || !ip.IsLinkLocalUnicast() {
			ip = ip.WithZone("")
		} else {
			ip = ip.WithZone(strconv.FormatUint(id, 10))
		}
	}
	return netip.AddrPortFrom(ip, addr.Port())
}

// releaseReusePort takes a closed listener of addr out of reusePorts.
func releaseReusePort(addr netip.AddrPort) {
	reusePorts.mu.Lock()
	defer reusePorts.mu.Unlock()
	key := reuseKey(addr)
	if reusePorts.held[key]--; reusePorts.held[key] <= 0 {
		delete(reusePorts.held, key)
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
