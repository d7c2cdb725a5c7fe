package aio

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// splitAddr: IP literals (the one-parse path) and everything else agree
// with what the long path says about them.
func TestSplitAddr(t *testing.T) {
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		addr   string
		listen bool
		want   netip.AddrPort
		name   string
		err    string
	}{
		{addr: "127.0.0.1:80", want: ap("127.0.0.1:80")},
		{addr: "127.0.0.1:080", want: ap("127.0.0.1:80")},
		{addr: "[::1]:443", want: ap("[::1]:443")},
		{addr: "[::ffff:10.0.0.1]:1", want: ap("10.0.0.1:1")}, // unmapped
		{addr: "[fe80::1%2]:22", want: ap("[fe80::1%2]:22")},
		{addr: "[fe80::1%eth0]:22", err: `zone "eth0"`},
		{addr: "[1.2.3.4]:5", want: ap("1.2.3.4:5")},
		{addr: ":8080", want: ap("127.0.0.1:8080")},
		{addr: ":8080", listen: true, want: ap("0.0.0.0:8080")},
		{addr: "localhost:9", want: ap("127.0.0.1:9")},
		{addr: "example.com:9", want: netip.AddrPortFrom(netip.Addr{}, 9), name: "example.com"},
		{addr: "example.com:9", listen: true, err: "not an IP address"},
		{addr: "127.0.0.1:65536", err: "not a number from 0 to 65535"},
		{addr: "127.0.0.1:http", err: "not a number"},
		{addr: "127.0.0.1:", err: "not a number"},
		{addr: "127.0.0.1", err: "missing port"},
		{addr: "::1:80", err: "too many colons"},
		{addr: "", err: "missing port"},
	} {
		got, name, err := splitAddr(tc.addr, tc.listen)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, "%q", tc.addr)
			require.ErrorIs(t, err, ErrInvalidArgument, "%q", tc.addr)
			continue
		}
		require.NoError(t, err, "%q", tc.addr)
		require.Equal(t, tc.want, got, "%q", tc.addr)
		require.Equal(t, tc.name, name, "%q", tc.addr)
	}
}
