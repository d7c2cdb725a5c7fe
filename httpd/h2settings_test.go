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

// A SETTINGS frame moves the streams' windows once, by what it did to
// SETTINGS_INITIAL_WINDOW_SIZE in all (a pass over the streams per frame,
// not per setting: thousands of settings in a frame cost thousands of
// passes); a window past 2^31-1 at any step of it is still a
// FLOW_CONTROL_ERROR (RFC 9113 §6.9.2); a frame of more than 100 settings
// is a budget spent (x/net/http2 refuses it too).
func TestH2SettingsInitialWindowPerFrame(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := openH2(t, ts.addr)
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}))
	c.get(1, "/health")
	for head := false; !head; {
		_, head = c.next().(*http2.MetaHeadersFrame)
	}
	iw := func(v uint32) http2.Setting { return http2.Setting{ID: http2.SettingInitialWindowSize, Val: v} }
	require.NoError(t, c.fr.WriteSettings(iw(5), iw(0), iw(1000), iw(1)))
	df, ok := c.next().(*http2.DataFrame)
	require.True(t, ok, "no DATA once the window grew")
	assert.Equal(t, "o", string(df.Data()), "the last value is the window")
	c.nc.Close()

	c = dialH2(t, ts.addr)
	c.get(1, "/slow?ms=600000") // a stream whose window is 65535 and stays
	require.NoError(t, c.fr.WriteWindowUpdate(1, 1))
	require.NoError(t, c.fr.WriteSettings(iw(h2MaxWindow), iw(h2DefaultWindow)))
	ga, ok := c.next().(*http2.GoAwayFrame)
	require.True(t, ok, "no GOAWAY for a window past 2^31-1 in the middle of a frame")
	assert.Equal(t, http2.ErrCodeFlowControl, ga.ErrCode)

	abusive := ts.Stats().Abusive
	c = dialH2(t, ts.addr)
	many := make([]http2.Setting, h2MaxSettings+1)
	for i := range many {
		many[i] = iw(uint32(i))
	}
	require.NoError(t, c.fr.WriteSettings(many...))
	ga, ok = c.next().(*http2.GoAwayFrame)
	require.True(t, ok, "no GOAWAY for %d settings in a frame", len(many))
	assert.Equal(t, http2.ErrCodeEnhanceYourCalm, ga.ErrCode)
	assert.Equal(t, abusive+1, ts.Stats().Abusive)
	ts.atRest(t)
}
