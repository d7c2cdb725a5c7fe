package aio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// net/http's server over views, under a client that keeps connections
// alive and sends POSTs of every size, some larger than the sockets'
// buffers, with GETs between them. The server closes no idle connection
// during the test (IdleTimeout 0 falls back to ReadTimeout, a minute), so
// no request may fail: the idle-close race (a POST sent on a connection
// the server is closing, which the client does not retry) cannot happen,
// and a failure is the view's. The server's timeouts make net/http set
// both deadlines on every request. The same client runs against package net's
// listener first, so that a failure of the client or of net/http shows
// there too.
func TestNetConnHTTPKeepAlive(t *testing.T) {
	for _, pool := range []struct {
		name string
		idle int // Transport.MaxIdleConnsPerHost
	}{
		{"pooled", httpStressClients}, // every connection kept alive
		{"churn", 0},                  // net/http's default: 2 kept, the rest closed
	} {
		t.Run(pool.name, func(t *testing.T) {
			t.Run("net", func(t *testing.T) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				httpStress(t, ln, pool.idle, nil)
			})
			t.Run("view", func(t *testing.T) {
				l := startLoop(t)
				// Room for every connection the clients may open at once: one
				// refused all the same would fail its request, and the test,
				// for the test's sake.
				vl, dropped := listenViewsN(t, l, 1024)
				httpStress(t, vl, pool.idle, dropped)
				closedLoopTCP(t, l)
			})
		})
	}
}

const (
	httpStressClients = 16        // client goroutines
	httpStressMaxBody = 256 << 10 // largest POST body
)

// httpStressRounds is how many requests each client goroutine sends: 40
// (a POST and a GET, 20 times) by default, a few seconds under -race;
// AIO_HTTP_STRESS_ROUNDS to soak.
func httpStressRounds() int {
	if n, err := strconv.Atoi(os.Getenv("AIO_HTTP_STRESS_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 40
}

// httpStress serves ln with net/http and has httpStressClients goroutines
// send httpStressRounds requests each, alternating POSTs of random bodies
// (sized, or chunked one time in four) and GETs, checking every reply: the
// body's length and SHA-256 as the handler read it.
func httpStress(t *testing.T, ln net.Listener, idle int, dropped *atomic.Int64) {
	var logged strings.Builder
	var logMu sync.Mutex
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := sha256.New()
			n, err := io.Copy(h, r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "%s %d %x", r.Method, n, h.Sum(nil))
		}),
		ReadTimeout:  waitTimeout,
		WriteTimeout: waitTimeout,
		ErrorLog:     log.New(&lockedWriter{w: &logged, mu: &logMu}, "", 0),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	// A check that fails before the Shutdown below must not leave Serve
	// and its connections running for goleak to report as a second
	// failure; after a Shutdown, Close does nothing more.
	t.Cleanup(func() { srv.Close() })

	tr := &http.Transport{MaxIdleConnsPerHost: idle, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: waitTimeout}
	url := "http://" + ln.Addr().String()
	src := make([]byte, httpStressMaxBody)
	for i := range src {
		src[i] = byte(rand.Uint32())
	}

	rounds := httpStressRounds()
	var failed atomic.Int64
	var firstErrs sync.Map // goroutine → its first failure
	var wg sync.WaitGroup
	for g := range httpStressClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range rounds {
				err := httpStressRequest(client, url, src, rng, i)
				if err != nil {
					failed.Add(1)
					firstErrs.LoadOrStore(g, fmt.Errorf("goroutine %d, request %d: %w", g, i, err))
				}
			}
		}()
	}
	wg.Wait()

	var errs []string
	firstErrs.Range(func(_, v any) bool { errs = append(errs, v.(error).Error()); return true })
	logMu.Lock()
	serverLog := logged.String()
	logMu.Unlock()
	require.Zero(t, failed.Load(), "%d of %d requests failed; first per goroutine:\n%s\nserver log:\n%s",
		failed.Load(), httpStressClients*rounds, strings.Join(errs, "\n"), serverLog)
	if dropped != nil {
		require.Zero(t, dropped.Load(), "connections refused by the test's listener")
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	require.ErrorIs(t, recv(t, served), http.ErrServerClosed)
	tr.CloseIdleConnections()
}

// httpStressRequest sends request i of a client goroutine: a POST for
// even i, a GET for odd, and checks the reply.
func httpStressRequest(client *http.Client, url string, src []byte, rng *rand.Rand, i int) error {
	var (
		req  *http.Request
		err  error
		want []byte
	)
	if i%2 == 1 {
		req, err = http.NewRequest("GET", url+"/get", nil)
	} else {
		size := rng.IntN(len(src) + 1)
		off := rng.IntN(len(src) - size + 1)
		want = src[off : off+size]
		var body io.Reader = bytes.NewReader(want)
		if rng.IntN(4) == 0 {
			body = io.MultiReader(body) // no length: chunked
		}
		req, err = http.NewRequest("POST", url+"/post", body)
	}
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %d bytes: %w", req.Method, len(want), err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("%s %d bytes: reading the reply: %w", req.Method, len(want), err)
	}
	sum := sha256.Sum256(want)
	expect := fmt.Sprintf("%s %d %s", req.Method, len(want), hex.EncodeToString(sum[:]))
	if resp.StatusCode != http.StatusOK || string(got) != expect {
		return fmt.Errorf("%s %d bytes: reply %d %q, want %q", req.Method, len(want), resp.StatusCode, got, expect)
	}
	return nil
}

// lockedWriter serialises the writes of the server's error log.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (lw *lockedWriter) Write(b []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(b)
}

// net/http's background read (connReader.startBackgroundRead and
// abortPendingRead): a goroutine blocks in a one-byte Read while the
// handler runs, and the server ends it with a read deadline in the past,
// waits for it, then clears the deadline and reads the next request. Here
// the peer's next bytes race the abort, round after round: the blocked
// Read either takes the first byte or returns a timeout that net/http
// recognises (a net.Error whose Timeout is true) at once, and not one
// byte is lost or reordered: the next Reads return the rest.
func TestNetConnAbortedBackgroundRead(t *testing.T) {
	l := startLoop(t)
	view, _, peer := viewPair(t, l, ListenConfig{})
	const rounds = 500
	var took, aborted int
	for i := range rounds {
		msg := fmt.Sprintf("request %d;", i)
		started := make(chan struct{})
		type result struct {
			b   byte
			n   int
			err error
		}
		done := make(chan result, 1)
		go func() {
			var one [1]byte
			close(started)
			n, err := view.Read(one[:])
			done <- result{one[0], n, err}
		}()
		<-started
		wrote := make(chan error, 1)
		go func() { _, err := peer.Write([]byte(msg)); wrote <- err }()
		// The abort goes out after a varying delay, so that the bytes
		// reach the view before it, after it, or as it goes.
		for range i % 50 * 200 {
			runtime.Gosched()
		}
		require.NoError(t, view.SetReadDeadline(aLongTimeAgo))
		r := recv(t, done)
		require.NoError(t, view.SetReadDeadline(time.Time{}))
		require.NoError(t, recv(t, wrote))
		var got []byte
		switch {
		case r.err == nil:
			require.Equal(t, 1, r.n)
			got = append(got, r.b)
			took++
		default:
			require.Zero(t, r.n)
			ne, ok := r.err.(net.Error)
			require.True(t, ok && ne.Timeout(), "round %d: the aborted Read failed with %v", i, r.err)
			aborted++
		}
		rest := make([]byte, len(msg)-len(got))
		_, err := io.ReadFull(view, rest)
		require.NoError(t, err, "round %d", i)
		require.Equal(t, msg, string(append(got, rest...)), "round %d", i)
	}
	t.Logf("%d rounds: the Read took the first byte in %d, was aborted in %d", rounds, took, aborted)
	require.NoError(t, view.Close())
}

// aLongTimeAgo is net/http's deadline for aborting a Read.
var aLongTimeAgo = time.Unix(1, 0)
