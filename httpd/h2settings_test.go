package httpd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
)

// A response held by a stream window of 0 goes as SETTINGS frames grow
// SETTINGS_INITIAL_WINDOW_SIZE, and not before: a SETTINGS that changes
// something else sends nothing.
func TestH2SettingsWindowReleases(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := openH2(t, ts.addr)
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}))
	c.get(1, "/health")
	var head bool
	for !head {
		switch f := c.next().(type) {
		case *http2.SettingsFrame:
		case *http2.MetaHeadersFrame:
			require.Equal(t, uint32(1), f.StreamID)
			require.False(t, f.StreamEnded())
			head = true
		default:
			t.Fatalf("unexpected frame %v", f)
		}
	}
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 15}))
	require.NoError(t, c.fr.WritePing(false, [8]byte{1}))
	f := c.frame() // the SETTINGS ack and the PING's: no DATA
	for ; ; f = c.frame() {
		if sf, ok := f.(*http2.SettingsFrame); ok && sf.IsAck() {
			continue
		}
		if _, ok := f.(*http2.WindowUpdateFrame); ok {
			continue
		}
		break
	}
	pf, ok := f.(*http2.PingFrame)
	require.True(t, ok && pf.IsAck(), "DATA before the window grew: %v", f)
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1}))
	df, ok := c.next().(*http2.DataFrame)
	require.True(t, ok, "no DATA once the window grew")
	assert.Equal(t, "o", string(df.Data()))
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 2}))
	df, ok = c.next().(*http2.DataFrame)
	require.True(t, ok, "no DATA once the window grew")
	assert.Equal(t, "k", string(df.Data()))
	assert.True(t, df.StreamEnded())
	ts.atRest(t)
}
