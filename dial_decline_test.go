package aio

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// declineSetup is a client loop l and an echo server on another loop s, for
// the tests of a dialed connection that its consumers decline.
func declineSetup(t *testing.T) (l, s *Loop, addr string) {
	t.Helper()
	rt := newRuntime(t, RuntimeConfig{})
	l, s = startLoopOn(t, rt, Config{Name: "client"}), startLoopOn(t, rt, Config{Name: "server"})
	return l, s, echoListen(t, s, ListenConfig{}).Addr().String()
}

// cancelAsConnectCompletes builds a handle with mk (on the test goroutine,
// mk dialing from l) and cancels it from the test goroutine just as the
// connect completes: l is held in the read callback of a connection of its
// own, ready before the dial's socket, while the cancel is posted, so that
// the connect's completion is dispatched first, in the same poll batch. It
// returns the number of fds open before mk ran. l keeps that connection
// (Stats.TCPOpen 1).
func cancelAsConnectCompletes[T any](t *testing.T, l *Loop, mk func() *Handle[T]) (fds int) {
	t.Helper()
	xs := make(chan *Conn, 1)
	lnx, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) { xs <- c })
	require.NoError(t, err)
	nc := netDial(t, lnx)
	x := recv(t, xs)
	inRead, unblock := make(chan struct{}), make(chan struct{})
	var once sync.Once
	require.NoError(t, x.OnRead(func(*Conn, []byte) { once.Do(func() { close(inRead); <-unblock }) }))
	fds = fdCount(t)

	release := holdLoop(t, l)
	_, err = nc.Write([]byte("x")) // x is ready before the dial's socket is
	require.NoError(t, err)
	h := mk()
	release()
	recv(t, inRead) // the connect has completed in the kernel by now (loopback)
	require.True(t, h.Cancel())
	close(unblock)
	_, err = wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)
	return fds
}

// dialedSetup is declineSetup with a connection d dialed from l to the
// echo server and completed, nobody registered on it yet; fds is the
// number of fds open before the dial.
func dialedSetup(t *testing.T) (l, s *Loop, fds int, d *Handle[*Conn]) {
	t.Helper()
	l, s, addr := declineSetup(t)
	fds = fdCount(t)
	d = Dial(l, addr, ConnConfig{})
	_, err := wait(t, d)
	require.NoError(t, err)
	return l, s, fds, d
}

// requireDialReleased waits until l has only want connections open, s none,
// and the process is back to fds open fds: the dialed connection nobody took
// was closed, and so was its peer.
func requireDialReleased(t *testing.T, l, s *Loop, want, fds int) {
	t.Helper()
	eventually(t, func() bool { return l.Stats().TCPOpen == want }, "the dialed connection is still open: %+v", l.Stats())
	eventually(t, func() bool { return s.Stats().TCPOpen == 0 }, "the server's end is still open: %+v", s.Stats())
	eventually(t, func() bool { return fdCount(t) == fds }, "fds left open")
}

// A Then on a Dial cancelled from another goroutine just as the connect
// completes must not leave the connection open with nobody holding it.
func TestDialConsumerCancelledAsConnectCompletes(t *testing.T) {
	l, s, addr := declineSetup(t)
	fds := cancelAsConnectCompletes(t, l, func() *Handle[struct{}] {
		return Then(Dial(l, addr, ConnConfig{}), func(*Conn) (struct{}, error) { return struct{}{}, nil })
	})
	requireDialReleased(t, l, s, 1, fds)
}

// Within(Dial) cancelled as the connect completes: Within sees itself
// cancelled and ignores its input, and its stop withdraws from a completed
// dial.
func TestDialWithinCancelledAsConnectCompletes(t *testing.T) {
	l, s, addr := declineSetup(t)
	fds := cancelAsConnectCompletes(t, l, func() *Handle[*Conn] {
		return Within(Dial(l, addr, ConnConfig{}), waitTimeout)
	})
	requireDialReleased(t, l, s, 1, fds)
}

// Then(Within(Dial)) cancelled as the connect completes: Within passed the
// connection on, and the Then declines it there.
func TestDialThenWithinCancelledAsConnectCompletes(t *testing.T) {
	l, s, addr := declineSetup(t)
	fds := cancelAsConnectCompletes(t, l, func() *Handle[struct{}] {
		return Then(Within(Dial(l, addr, ConnConfig{}), waitTimeout), func(*Conn) (struct{}, error) { return struct{}{}, nil })
	})
	requireDialReleased(t, l, s, 1, fds)
}

// A Race of two Dials whose loser has completed when the winner's report
// decides: the race withdraws from a completed handle, whose connection
// nobody takes.
func TestDialRaceLoserCompletedReleased(t *testing.T) {
	l, s, addr := declineSetup(t)
	fds := fdCount(t)
	raceCompletedDials(t, l, s, fds, Dial(l, addr, ConnConfig{}), Dial(l, addr, ConnConfig{}))
}

// raceCompletedDials races d1 and d2, dialed from l to an echo server on s,
// once both have completed (waiting is not interest): the race's first
// report decides, and the other input is completed, its report still
// queued. The loser must be closed, the winner open; then it closes the
// winner and checks that everything came back to fds.
func raceCompletedDials(t *testing.T, l, s *Loop, fds int, d1, d2 *Handle[*Conn]) {
	t.Helper()
	_, err := wait(t, d1)
	require.NoError(t, err)
	_, err = wait(t, d2)
	require.NoError(t, err)
	c, err := wait(t, Race(d1, d2))
	require.NoError(t, err)
	eventually(t, func() bool { return l.Stats().TCPOpen == 1 }, "the loser is still open: %+v", l.Stats())
	pingEcho(t, l, c) // the winner's is the program's, open
	onLoop(t, l, func() { c.Close() })
	requireDialReleased(t, l, s, 0, fds)
}

// pingEcho writes on c, dialed from l to an echo server, and reads the echo
// back.
func pingEcho(t *testing.T, l *Loop, c *Conn) {
	t.Helper()
	got := make(chan string, 1)
	onLoop(t, l, func() {
		require.NoError(t, c.OnRead(func(_ *Conn, b []byte) { got <- string(b) }))
		_, err := c.Write([]byte("ping"))
		require.NoError(t, err)
	})
	require.Equal(t, "ping", recv(t, got))
}

// A connection taken by one dependent is never closed by the others
// declining it, whatever their order: a Then on the completed dial takes it
// (registered late), another registered later is cancelled, a Within of it
// passes it on to a Then that is cancelled, and the taker still writes on it.
func TestDialTakenNotReleased(t *testing.T) {
	l, s, fds, d := dialedSetup(t)
	taken := make(chan *Conn, 1)
	kept := Then(d, func(c *Conn) (struct{}, error) { taken <- c; return struct{}{}, nil })
	c := recv(t, taken)
	_, err := wait(t, kept)
	require.NoError(t, err)

	// Built and cancelled in one callback: each is cancelled before it is
	// told (jobs run in order), so it declines the value.
	var late, passed *Handle[struct{}]
	onLoop(t, l, func() {
		late = Then(d, func(*Conn) (struct{}, error) { return struct{}{}, nil })
		require.True(t, late.Cancel())
		passed = Then(Within(d, waitTimeout), func(*Conn) (struct{}, error) { return struct{}{}, nil })
		require.True(t, passed.Cancel())
	})
	_, err = wait(t, late)
	require.ErrorIs(t, err, ErrCancelled)
	_, err = wait(t, passed)
	require.ErrorIs(t, err, ErrCancelled)
	pingEcho(t, l, c)
	require.EqualValues(t, 1, l.Stats().TCPOpen)
	onLoop(t, l, func() { c.Close() })
	requireDialReleased(t, l, s, 0, fds)
}

// Catch, Finally, Tap and ThenAsync on a Dial, cancelled as the connect
// completes, decline the connection as Then does.
func TestDialContinuationsCancelledAsConnectCompletes(t *testing.T) {
	for name, mk := range map[string]func(*Handle[*Conn]) *Handle[*Conn]{
		"Catch": func(h *Handle[*Conn]) *Handle[*Conn] {
			return Catch(h, func(err error) (*Conn, error) { return nil, err })
		},
		"Finally": func(h *Handle[*Conn]) *Handle[*Conn] { return Finally(h, func() {}) },
		"Tap":     func(h *Handle[*Conn]) *Handle[*Conn] { return Tap(h, func(*Conn) {}) },
		"ThenAsync": func(h *Handle[*Conn]) *Handle[*Conn] {
			return ThenAsync(h, func(c *Conn) *Handle[*Conn] { return Pure(c.Loop(), c) })
		},
	} {
		t.Run(name, func(t *testing.T) {
			l, s, addr := declineSetup(t)
			fds := cancelAsConnectCompletes(t, l, func() *Handle[*Conn] { return mk(Dial(l, addr, ConnConfig{})) })
			requireDialReleased(t, l, s, 1, fds)
		})
	}
}

// The loser of a Race of two TLS dials, completed when the winner decides,
// is closed: the Do that runs the handshake marks its connection, and the
// Within of the handshake timeout passes it on.
func TestDialTLSRaceLoserReleased(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l, s := startLoopOn(t, rt, Config{Name: "client"}), startLoopOn(t, rt, Config{Name: "server"})
	scfg, ccfg := tlsConfigs(t)
	addr := tlsEchoListen(t, s, ListenConfig{TLS: scfg}).Addr().String()
	fds := fdCount(t)
	d := &Dialer{TLS: ccfg}
	raceCompletedDials(t, l, s, fds, d.Dial(l, addr), d.Dial(l, addr))
}

// All that fails after it collected a dial's connection never delivers it:
// the connection is declined like a withdrawn input's, and closed.
func TestDialCollectedByFailedAllReleased(t *testing.T) {
	l, s, addr := declineSetup(t)
	fds := fdCount(t)
	failAllOver(t, l, Dial(l, addr, ConnConfig{}))
	requireDialReleased(t, l, s, 0, fds)
}

// failAllOver lets an All on l collect h's connection, then fails that All
// with another input's error.
func failAllOver(t *testing.T, l *Loop, h *Handle[*Conn]) {
	t.Helper()
	p := NewPromise[*Conn](l)
	all := All(h, p.Handle())
	_, err := wait(t, h) // collected by All on h's completion (on l), before the Reject below
	require.NoError(t, err)
	require.True(t, p.Reject(errBoom))
	_, err = wait(t, all)
	require.ErrorIs(t, err, errBoom)
}

// All cancelled after it collected a dial's connection declines it too.
func TestDialCollectedByCancelledAllReleased(t *testing.T) {
	requireCollectedDeclinedOnCancel(t, func(in ...*Handle[*Conn]) *Handle[[]*Conn] { return All(in...) })
}

// AllSettled cancelled after it collected a dial's connection declines it,
// as All does.
func TestDialCollectedByCancelledAllSettledReleased(t *testing.T) {
	requireCollectedDeclinedOnCancel(t, AllSettled[*Conn])
}

// requireCollectedDeclinedOnCancel builds sink over a dial and a handle
// that never ends, lets the sink collect the dial's connection, cancels the
// sink and waits for the connection to be released.
func requireCollectedDeclinedOnCancel[R any](t *testing.T, sink func(...*Handle[*Conn]) *Handle[R]) {
	t.Helper()
	l, s, addr := declineSetup(t)
	fds := fdCount(t)
	d := Dial(l, addr, ConnConfig{})
	h := sink(d, NewPromise[*Conn](l).Handle())
	_, err := wait(t, d) // collected by the sink on d's completion
	require.NoError(t, err)
	require.True(t, h.Cancel())
	_, err = wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)
	requireDialReleased(t, l, s, 0, fds)
}

// A cancelled sink withdraws from its inputs withdrawBatch at a time; an
// input that completes before its turn (here the last of many, a ThenAsync
// passing on a dial's connection, completed by the jobs queued between the
// batches) is ignored by the ended sink and declined at its turn: the
// connection is closed, not left with nobody holding it.
func TestDialCompletedBeforeWithdrawalTurnReleased(t *testing.T) {
	l, s, fds, d := dialedSetup(t)
	const n = 16 * withdrawBatch
	var late *Handle[*Conn]
	var all *Handle[[]*Conn]
	var cancelled bool
	onLoop(t, l, func() {
		p := NewPromise[int](l)
		late = ThenAsync(p.Handle(), func(int) *Handle[*Conn] { return d })
		in := make([]*Handle[*Conn], n)
		for i := range in[:n-1] {
			in[i] = NewPromise[*Conn](l).Handle()
		}
		in[n-1] = late
		all = All(in...)
		cancelled = all.Cancel()
		p.Resolve(0) // late completes while the earlier batches are withdrawn
	})
	require.True(t, cancelled)
	_, err := wait(t, all)
	require.ErrorIs(t, err, ErrCancelled)
	// all is Cancelled as soon as Cancel returns, while its inputs are still
	// being withdrawn on the loop: wait for late itself, not its status now.
	_, err = wait(t, late)
	require.NoError(t, err, "the last input was withdrawn before it ended")
	requireDialReleased(t, l, s, 0, fds)
}
