//go:build linux && !386 && !s390x

package sock

import (
	"net/netip"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// rawSockaddr and rawAddrPort, Linux's own conversions (bypassing x/sys),
// agree with Sockaddr and AddrPortOf, and put the port in network order.
func TestRawSockaddr(t *testing.T) {
	for _, s := range []string{
		"127.0.0.1:80", "0.0.0.0:0", "10.1.2.3:65535", "[::1]:443", "[::]:1",
		"[fe80::1%7]:4660", "[::ffff:10.0.0.1]:9",
	} {
		ap := netip.MustParseAddrPort(s)
		var rsa unix.RawSockaddrAny
		n := rawSockaddr(&rsa, ap)
		if ap.Addr().Is4() {
			assert.Equal(t, uint32(unix.SizeofSockaddrInet4), n, s)
			assert.Equal(t, uint16(unix.AF_INET), rsa.Addr.Family, s)
		} else {
			assert.Equal(t, uint32(unix.SizeofSockaddrInet6), n, s)
			assert.Equal(t, uint16(unix.AF_INET6), rsa.Addr.Family, s)
		}
		port := (*[4]byte)(unsafe.Pointer(&rsa))[2:4] // sin_port and sin6_port
		assert.Equal(t, []byte{byte(ap.Port() >> 8), byte(ap.Port())}, port, "%s: port bytes", s)
		sa, _ := Sockaddr(ap)
		assert.Equal(t, AddrPortOf(sa), rawAddrPort(&rsa), s)
	}
	var unixAddr unix.RawSockaddrAny
	unixAddr.Addr.Family = unix.AF_UNIX
	assert.Equal(t, netip.AddrPort{}, rawAddrPort(&unixAddr))
}
