package httpd

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// settingsPayload is a SETTINGS payload, base64url as in HTTP2-Settings.
func settingsPayload(ss ...http2.Setting) string {
	var b []byte
	for _, s := range ss {
		b = binary.BigEndian.AppendUint16(b, uint16(s.ID))
		b = binary.BigEndian.AppendUint32(b, s.Val)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// upgradeReq is an h2c upgrade request for path with HTTP2-Settings
// settings and body.
func upgradeReq(method, path, settings, body string) string {
	req := method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n" +
		"Upgrade: h2c\r\nHTTP2-Settings: " + settings + "\r\n"
	if body != "" {
		req += "Content-Length: " + itoa(len(body)) + "\r\n"
	}
	return req + "\r\n" + body
}

// upgradeH2 sends an upgrade request on a new connection, reads the exact
// 101, and returns the HTTP/2 client the connection becomes (preface not
// sent yet).
func upgradeH2(t *testing.T, addr, req string) (*h2Raw, *bufio.Reader) {
	t.Helper()
	rc := dialRaw(t, addr)
	rc.send(req)
	return upgradedOn(t, rc)
}

// upgradedOn reads the exact 101 of an upgrade request sent on rc, and
// returns the HTTP/2 client the connection becomes (preface not sent).
func upgradedOn(t *testing.T, rc *rawConn) (*h2Raw, *bufio.Reader) {
	t.Helper()
	got := make([]byte, len(h2UpgradeResponse))
	_, err := io.ReadFull(rc.br, got)
	require.NoError(t, err)
	require.Equal(t, h2UpgradeResponse, string(got))
	c := &h2Raw{t: t, nc: rc.Conn, fr: http2.NewFramer(rc.Conn, rc.br)}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.he = hpack.NewEncoder(&c.hb)
	return c, rc.br
}

// An upgraded request is stream 1: the 101 (exact bytes), the server's
// SETTINGS, then its response over HTTP/2 under the settings the upgrade
// carried (a 4-byte stream window here); the connection then goes on as
// HTTP/2 once the client's preface arrives.
func TestH2Upgrade(t *testing.T) {
	ts := startServer(t, testMux(), Config{H2CUpgrade: true})
	c, _ := upgradeH2(t, ts.addr, upgradeReq("GET", "/users/5", settingsPayload(
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: 4}), ""))
	sf, ok := c.next().(*http2.SettingsFrame)
	require.True(t, ok && !sf.IsAck(), "the server's SETTINGS come first")
	hf, ok := c.next().(*http2.MetaHeadersFrame)
	require.True(t, ok, "no HEADERS")
	assert.Equal(t, uint32(1), hf.StreamID)
	assert.Equal(t, "200", hf.PseudoValue("status"))
	df, ok := c.next().(*http2.DataFrame)
	require.True(t, ok, "no DATA")
	assert.Equal(t, `{"id`, string(df.Data()), "the upgrade's window holds it to 4 bytes")

	_, err := io.WriteString(c.nc, http2.ClientPreface)
	require.NoError(t, err)
	require.NoError(t, c.fr.WriteSettings())
	require.NoError(t, c.fr.WriteWindowUpdate(1, 100))
	df, ok = c.next().(*http2.DataFrame)
	require.True(t, ok, "no DATA")
	assert.Equal(t, `":"5"}`, string(df.Data()))
	assert.True(t, df.StreamEnded())
	c.get(3, "/health")
	c.expect(3, "200", "ok")
	ts.atRest(t)
	assert.Equal(t, int64(1), ts.Stats().ConnsOpen)
}

// An upgrade with a body buffered in the arena: the body reaches the
// handler of stream 1.
func TestH2UpgradeWithBody(t *testing.T) {
	ts := startServer(t, testMux(), Config{H2CUpgrade: true})
	c, _ := upgradeH2(t, ts.addr, upgradeReq("POST", "/echo", settingsPayload(), "hello"))
	_, err := io.WriteString(c.nc, http2.ClientPreface)
	require.NoError(t, err)
	require.NoError(t, c.fr.WriteSettings())
	_, ok := c.next().(*http2.SettingsFrame)
	require.True(t, ok)
	c.expect(1, "200", "hello")
	ts.atRest(t)
}

// What cannot be upgraded is served as HTTP/1.1, on a connection that
// stays HTTP/1.1.
func TestH2UpgradeIgnored(t *testing.T) {
	ts := startServer(t, testMux(), Config{ArenaSize: 4096, H2CUpgrade: true})
	good := settingsPayload(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 20})
	for _, tc := range []struct{ name, req string }{
		{"bad base64", upgradeReq("GET", "/health", "!!!", "")},
		{"not whole settings", upgradeReq("GET", "/health", "AAMAAA", "")},
		{"invalid setting", upgradeReq("GET", "/health", settingsPayload(http2.Setting{ID: http2.SettingEnablePush, Val: 2}), "")},
		{"two HTTP2-Settings", strings.Replace(upgradeReq("GET", "/health", good, ""), "\r\n\r\n", "\r\nHTTP2-Settings: "+good+"\r\n\r\n", 1)},
		{"no HTTP2-Settings", strings.Replace(upgradeReq("GET", "/health", good, ""), "HTTP2-Settings: "+good+"\r\n", "", 1)},
		{"Connection without HTTP2-Settings", strings.Replace(upgradeReq("GET", "/health", good, ""), "Upgrade, HTTP2-Settings", "Upgrade", 1)},
		{"another protocol", strings.Replace(upgradeReq("GET", "/health", good, ""), "Upgrade: h2c", "Upgrade: websocket", 1)},
		{"HTTP/1.0", strings.Replace(upgradeReq("GET", "/health", good, ""), "HTTP/1.1", "HTTP/1.0", 1)},
		{"body past the arena", upgradeReq("POST", "/echo", good, strings.Repeat("a", 3000))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, ts.addr)
			c.send(tc.req)
			method := tc.req[:strings.IndexByte(tc.req, ' ')]
			resp := c.read(method)
			require.Equal(t, 200, resp.status)
			if method == "GET" {
				assert.Equal(t, "ok", resp.body)
			} else {
				assert.Equal(t, 3000, len(resp.body))
			}
			if !resp.close {
				c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n") // still HTTP/1.1
				assert.Equal(t, "ok", c.read("GET").body)
			}
		})
	}
	ts.atRest(t)
}

// Without H2CUpgrade (the default), a valid upgrade request is served as
// HTTP/1.1, and the HTTP/1.1 request pipelined after it (what a proxy that
// passes Upgrade on would see) is too: no HTTP/2 request can be tunnelled
// past such a proxy. Prior knowledge still speaks HTTP/2.
func TestH2UpgradeOffByDefault(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialRaw(t, ts.addr)
	c.send(upgradeReq("GET", "/health", settingsPayload(), "") + "GET /users/5 HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "ok", c.read("GET").body)
	assert.Equal(t, `{"id":"5"}`, c.read("GET").body)
	h := dialH2(t, ts.addr)
	h.get(1, "/health")
	h.expect(1, "200", "ok")
	ts.atRest(t)
}

// A client that takes the 101 and then does not send the preface loses
// the connection; stream 1's arena comes back.
func TestH2UpgradeBadPreface(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{H2CUpgrade: true})
	c, _ := upgradeH2(t, ts.addr, upgradeReq("GET", "/promise", settingsPayload(), ""))
	recvT(t, p.promises)
	_, err := io.WriteString(c.nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	assert.True(t, c.eof())
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Cancelled)
}

// curl --http2 upgrades: a GET, a POST with a small body; a body larger
// than the arena buffers is answered over HTTP/1.1.
func TestH2UpgradeCurl(t *testing.T) {
	ts := startServer(t, testMux(), Config{H2CUpgrade: true})
	run := curlRunner(t, "--http2", "-w", " %{http_version}")
	assert.Equal(t, "ok 2", run(ts.url+"/health"))
	assert.Equal(t, "hello 2", run("--data-binary", "hello", ts.url+"/echo"))
	body, file := curlBody(t)
	assert.True(t, body+" 1.1" == run("--data-binary", "@"+file, ts.url+"/echo"), "large echo differs")
	ts.atRest(t)
}

// The upgraded stream comes from the loop's pool of streams, as every
// other stream does, and goes back to it.
func TestH2UpgradeStreamPooled(t *testing.T) {
	ts := startServer(t, testMux(), Config{H2CUpgrade: true})
	c := dialH2(t, ts.addr)
	c.get(1, "/health")
	c.expect(1, "200", "ok")
	ts.atRest(t)
	var pooled []*h2stream
	ts.onLoop(t, func() { pooled = slices.Clone(ts.loopStates()[0].h2free) })
	require.Len(t, pooled, 1)

	u, _ := upgradeH2(t, ts.addr, upgradeReq("GET", "/health", settingsPayload(), ""))
	_, ok := u.next().(*http2.SettingsFrame)
	require.True(t, ok, "the server's SETTINGS come first")
	u.expect(1, "200", "ok")
	ts.atRest(t)
	ts.onLoop(t, func() {
		assert.Equal(t, pooled, ts.loopStates()[0].h2free, "the pool's stream served the upgrade")
	})
}

// FromHTTP gives the request of an Upgrade: h2c the version it was sent
// with, HTTP/1.1, as net/http's h2c does: it said 2.1 (ProtoMajor 2 from
// the stream it is answered on, ProtoMinor 1 from its head).
func TestH2UpgradeFromHTTPProto(t *testing.T) {
	ts := startServer(t, FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %d.%d", r.Proto, r.ProtoMajor, r.ProtoMinor)
	})), Config{H2CUpgrade: true})
	c, _ := upgradeH2(t, ts.addr, upgradeReq("GET", "/", "", ""))
	_, err := io.WriteString(c.nc, http2.ClientPreface)
	require.NoError(t, err)
	require.NoError(t, c.fr.WriteSettings())
	_, body := c.responseOf(1)
	assert.Equal(t, "HTTP/1.1 1.1", body)
	c.get(3, "/") // a request of the HTTP/2 connection itself
	_, body = c.responseOf(3)
	assert.Equal(t, "HTTP/2.0 2.0", body)
}
