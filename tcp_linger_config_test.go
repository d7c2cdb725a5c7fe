package aio

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ConnConfig.Linger bounds the lingering close of a peer that never
// closes: a short one ends it long before DefaultLinger would.
func TestListenerDrainLingerConfigured(t *testing.T) {
	requireDrainEndsEarly(t, ConnConfig{Linger: 50 * time.Millisecond}, "the configured linger, not the default")
}

// A timeout that runs out while a connection lingers ends the linger, as
// its own bound does: the connection ended well (its reply and FIN are
// out), so it closes with no error, not with the timeout's.
func TestConnLingerCutByIdleTimeoutIsNoFailure(t *testing.T) {
	// Long beside the few steps from the accept to the drain (at 50 ms a
	// loaded machine once let the timeout end the connection before the
	// drain began, with ErrIdleTimeout), short beside DefaultLinger/2.
	requireDrainEndsEarly(t, ConnConfig{Linger: time.Hour, IdleTimeout: 300 * time.Millisecond}, "the idle timeout, not the linger")
}

// requireDrainEndsEarly checks that drainStubborn, with cfg, ends the
// connection (orderly) well before DefaultLinger, for why, and that every
// fd comes back.
func requireDrainEndsEarly(t *testing.T, cfg ConnConfig, why string) {
	t.Helper()
	l := startLoop(t)
	fds := fdCount(t)
	took, stubborn := drainStubborn(t, l, cfg)
	require.Less(t, took, DefaultLinger/2, why)

	closedLoopTCP(t, l)
	require.NoError(t, stubborn.Close())
	require.Equal(t, fds, fdCount(t), "fds back")
}

// A negative ConnConfig.Linger closes a draining connection right after
// its FIN, without waiting for the peer's EOF: the peer reads its replies
// and the FIN, and the connection is gone while the peer is still open.
func TestConnDrainNegativeLinger(t *testing.T) {
	l := startLoop(t)
	fds := fdCount(t)
	r := newRepliedConnWith(t, l, ConnConfig{Linger: -1}, []byte("reply"))
	ln, c, stubborn, closed := r.ln, r.c, r.nc, r.closed

	start := time.Now()
	_, err := waitWithin(t, DefaultLinger+waitTimeout, c.Drain())
	require.NoError(t, err)
	require.Less(t, time.Since(start), DefaultLinger/2, "closed without lingering")
	require.NoError(t, recv(t, closed), "closed orderly after the FIN")
	got, err := io.ReadAll(stubborn)
	require.NoError(t, err, "the reply, then EOF")
	require.Equal(t, "reply", string(got))

	_, err = wait(t, ln.Close())
	require.NoError(t, err)
	closedLoopTCP(t, l)
	require.NoError(t, stubborn.Close())
	require.Equal(t, fds, fdCount(t), "fds back")
}
