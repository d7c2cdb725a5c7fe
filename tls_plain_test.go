package aio

import (
	"crypto/tls"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// plainReply is the NotTLS of the tests: net/http's answer to a head
// that looks like HTTP, nothing to anything else.
func plainReply(head [5]byte) []byte {
	if string(head[:]) == "GET /" || string(head[:]) == "POST " {
		return []byte("HTTP/1.0 400 Bad Request\r\n\r\nplaintext\n")
	}
	return nil
}

// plainExchange sends req in plaintext to a TLS listener configured with
// notTLS and returns all it got back before the connection ended,
// requiring that it ended with a FIN (io.ReadAll ends without an error),
// not a reset. The handshake failure is counted and reported.
func plainExchange(t *testing.T, notTLS func([5]byte) []byte, req string) string {
	t.Helper()
	l := startLoop(t)
	scfg, _ := tlsConfigs(t)
	ln, failures := failuresListen(t, l, ListenConfig{TLS: scfg, NotTLS: notTLS})
	nc := netDial(t, ln)
	// The whole request, however long, goes while the reply comes: what
	// the server has not read yet when it answers must not reset the
	// connection.
	sent := make(chan error, 1)
	go func() {
		_, err := io.WriteString(nc, req)
		if err == nil {
			err = nc.CloseWrite()
		}
		sent <- err
	}()
	got, err := io.ReadAll(nc)
	require.NoError(t, err, "a FIN, not a reset")
	require.NoError(t, recv(t, sent))
	f := recv(t, failures)
	var rh tls.RecordHeaderError
	require.ErrorAs(t, f.err, &rh)
	require.Nil(t, rh.Conn, "the library's connection view leaked")
	require.Equal(t, req[:5], string(rh.RecordHeader[:]))
	require.EqualValues(t, 1, l.Stats().TLSHandshakeErrors)
	require.Zero(t, l.Stats().TLSHandshakes)
	closedLoopTCP(t, l.closeListener(t, ln))
	require.Zero(t, onLoopValue(t, l, func() int { return l.tcp.draining }),
		"the count of draining connections, which Runtime.Shutdown waits on, is off")
	return string(got)
}

// A plaintext HTTP request to a TLS listener with NotTLS gets the reply
// NotTLS made for its head, in plaintext, then the connection's end.
func TestTLSNotTLSAnswersPlaintext(t *testing.T) {
	got := plainExchange(t, plainReply, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	require.Equal(t, "HTTP/1.0 400 Bad Request\r\n\r\nplaintext\n", got)
}

// A request whose body is still coming when the reply is written: the
// rest is read and dropped (a close with unread bytes would reset the
// connection and could destroy the reply before the client read it).
func TestTLSNotTLSAnswersLongRequest(t *testing.T) {
	req := "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1048576\r\n\r\n" +
		strings.Repeat("x", 1<<20)
	got := plainExchange(t, plainReply, req)
	require.Equal(t, "HTTP/1.0 400 Bad Request\r\n\r\nplaintext\n", got)
}

// Without NotTLS, or when it has nothing to say, the connection closes
// with nothing written, as before.
func TestTLSNotTLSNothing(t *testing.T) {
	require.Empty(t, plainExchange(t, nil, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"))
	require.Empty(t, plainExchange(t, plainReply, "\x00\x01garbage that is not TLS\r\n"))
}

// A handshake that fails otherwise (a record that is TLS, but not what
// the server wants) is not NotTLS's: it is not asked.
func TestTLSNotTLSNotAskedForTLS(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	asked := false
	ln, failures := failuresListen(t, l, ListenConfig{TLS: scfg, NotTLS: func([5]byte) []byte {
		asked = true
		return []byte("no")
	}})
	old := ccfg.Clone()
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS10 // the server wants 1.2
	_, err := wait(t, (&Dialer{TLS: old}).Dial(l, ln.Addr().String()))
	require.Error(t, err)
	require.ErrorContains(t, recv(t, failures).err, "version")
	closedLoopTCP(t, l.closeListener(t, ln))
	require.False(t, onLoopValue(t, l, func() bool { return asked }))
}
