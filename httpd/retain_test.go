package httpd

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"github.com/valkyria/aio/internal/gcwatch"
)

// collected waits for freed to close (a runtime.AddCleanup's signal),
// collecting garbage meanwhile.
func collected(t *testing.T, freed <-chan struct{}, msg string) {
	t.Helper()
	require.True(t, gcwatch.Within(freed, waitTimeout), msg)
}

// A request's arena goes back to its slot as the request ends, but the
// slot must not keep the connection that request came on once it has
// closed: a slot reached only at a peak of load is not taken again until
// the next one, and would hold its last connection (its aio.Conn, TLS
// state, HTTP/2 framer and tables) that long.
func TestReleasedRequestLetsGoOfItsConnection(t *testing.T) {
	freed := make(chan struct{})
	m := NewMux()
	m.HandleFunc("GET /", func(r *Request) Reply {
		runtime.AddCleanup(r.eng.conn(), func(ch chan struct{}) { close(ch) }, freed)
		return Text(200, "ok")
	})
	ts := startServer(t, m, Config{})
	c := dialRaw(t, ts.addr)
	c.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	require.Equal(t, 200, c.read("GET").status)
	require.NoError(t, c.Close())
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection stays open")
	ts.atRest(t)
	ts.onLoop(t, func() {})
	collected(t, freed, "a released request's slot keeps its closed connection")
}

// A Server kept after its Shutdown lets go of the functions
// RegisterOnShutdown ran: a program keeps its *Server in a variable for as
// long as it runs.
func TestShutDownServerLetsGoOfItsShutdownFuncs(t *testing.T) {
	freed := make(chan struct{})
	ts := startServer(t, testMux(), Config{})
	func() {
		big := new([1 << 20]byte)
		runtime.AddCleanup(big, func(ch chan struct{}) { close(ch) }, freed)
		ts.RegisterOnShutdown(func() { _ = big[0] })
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, ts.Shutdown(ctx))
	collected(t, freed, "the shut down server keeps the functions RegisterOnShutdown ran")
	runtime.KeepAlive(ts.Server)
}

// A body's reader (OnData's fn, ReadAll's collector) has had its last
// call once the body's end is delivered: the request, which may go on for
// long after (a stream answering an upload), must not keep it, nor what
// it holds (ReadAll's collected bytes, which the handler has let go of).
func TestDeliveredBodyLetsGoOfItsReader(t *testing.T) {
	freed := make(chan struct{})
	streams := make(chan *Stream, 1)
	m := NewMux()
	m.HandleFunc("PUT /", func(r *Request) Reply {
		s := r.Stream(200, nil)
		aio.Tap(r.Body().ReadAll(), func(b []byte) {
			runtime.AddCleanup(&b[0], func(ch chan struct{}) { close(ch) }, freed)
			_, _ = s.WriteString("got it\n") // the stream goes on
			streams <- s
		})
		return s.Reply()
	})
	ts := startServer(t, m, Config{})
	c := dialRaw(t, ts.addr)
	const size = 1 << 20 // streams: larger than the arena
	c.send("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" + string(make([]byte, size)))
	s := <-streams
	ts.onLoop(t, func() {})
	collected(t, freed, "the request keeps the body's reader and what it collected")
	ts.onLoop(t, func() { s.End() })
	require.Equal(t, 200, c.read("PUT").status)
	require.NoError(t, c.Close())
	ts.atRest(t)
}

// A Server kept after its Shutdown lets go of its arenas, up to
// Arenas*ArenaSize per loop (64 MiB by default): none is taken again.
// The arena of a request that ended before the drain goes with the drain,
// and that of one the drain's deadline cut goes as the request ends
// (here a Work job that returns after the drain).
func TestShutDownServerLetsGoOfItsArenas(t *testing.T) {
	for _, cut := range []bool{false, true} {
		t.Run(map[bool]string{false: "ended", true: "cut"}[cut], func(t *testing.T) {
			freed := make(chan struct{})
			pending, hold := make(chan struct{}), make(chan struct{})
			m := NewMux()
			m.HandleFunc("GET /", func(r *Request) Reply {
				runtime.AddCleanup(&r.buf[0], func(ch chan struct{}) { close(ch) }, freed)
				if !cut {
					return Text(200, "ok")
				}
				close(pending)
				// A Work job holds its handle, and the arena, until fn
				// returns: after the drain.
				return Later(aio.Work(r.Loop(), func(context.Context) (Response, error) {
					<-hold
					return Response{}, errors.New("late")
				}))
			})
			ts := startServer(t, m, Config{})
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if cut {
				c := dialRaw(t, ts.addr)
				c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				<-pending
				short, stop := context.WithCancel(ctx)
				stop()
				require.ErrorIs(t, ts.Shutdown(short), context.Canceled)
				close(hold)
			} else {
				resp, err := client(t).Get(ts.url + "/")
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				require.NoError(t, ts.Shutdown(ctx))
			}
			ts.onLoop(t, func() {})
			collected(t, freed, "the shut down server keeps its arenas")
			runtime.KeepAlive(ts.Server)
		})
	}
}

// Stats.ArenasInUse counts the arenas requests hold, not the slab's
// slots: a shut-down server taking its free slots to empty them
// (dropArenas) shows none in use to a scraper reading Stats meanwhile.
func TestShutDownServerShowsNoArenasTaken(t *testing.T) {
	ts := startServer(t, NewMux(), Config{}) // DefaultArenas: 1024
	stop := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var most int64
		for {
			select {
			case <-stop:
				peak <- most
				return
			default:
			}
			most = max(most, ts.Stats().ArenasInUse)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, ts.Shutdown(ctx))
	close(stop)
	assert.Zero(t, <-peak, "an idle server showed arenas in use during its Shutdown")
}
