package httpd

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
)

// A HEAD answered by a Stream is over once its head has gone out (a HEAD
// gets no body): the stream ends as End ends it, its arena comes back,
// and the handler's next Write returns ErrStreamClosed. An endless stream
// (an event feed, which GET patterns serve to HEAD too) held its arena
// and, on HTTP/2, counted against the connection's stream limit for good:
// with 8 arenas the 9th HEAD was refused; on HTTP/1.1 the next request on
// the connection waited behind it.
func TestHeadStreamEndsWithItsHead(t *testing.T) {
	var ticks []*aio.Handle[struct{}] // on the loop
	ts := startServer(t, HandlerFunc(func(r *Request) Reply {
		s := r.Stream(200, []Field{{"Content-Type", "text/event-stream"}})
		var tick *aio.Handle[struct{}]
		tick = aio.Adopt(r.Scope(), aio.Every(r.Loop(), time.Millisecond, func() {
			if _, err := s.Write([]byte("data: x\n\n")); err != nil {
				tick.Cancel() // ErrStreamClosed, if the scope has not cancelled it first
			}
		}))
		ticks = append(ticks, tick)
		return s.Reply()
	}), Config{Arenas: 8})
	for _, c := range []*http.Client{client(t), h2Client(t)} {
		for i := range 20 {
			req, err := http.NewRequest("HEAD", ts.url+"/", nil)
			require.NoError(t, err)
			resp, _ := do(t, c, req)
			require.Equal(t, 200, resp.StatusCode, "HEAD %d", i)
		}
		ts.atRest(t)
	}
	running := 0
	ts.onLoop(t, func() {
		for _, h := range ticks {
			if !h.Status().Terminal() {
				running++
			}
		}
	})
	require.Zero(t, running, "every stream's timer ended with its stream")
	require.Len(t, ticks, 40)
}
