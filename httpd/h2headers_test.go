package httpd

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// A header list past SETTINGS_MAX_HEADER_LIST_SIZE, here one field longer
// than all of it (a string the decoder would once refuse, ending the
// connection with COMPRESSION_ERROR), is answered 431 on its stream with
// no handler run, counted as HTTP/1.1's 431 is (BadRequests), and the
// connection goes on: a stream open across it is answered, and a later
// request naming the dynamic table's entries that the oversized block
// added, before its long field and after it, is read with the right
// fields. With the default limits and with a small arena's (MaxHeadBytes
// is half the arena at most).
func TestH2HeaderListTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"default", Config{}}, {"small arena", Config{ArenaSize: 2048}}} {
		t.Run(tc.name, func(t *testing.T) {
			var big atomic.Int32
			m := testMux()
			m.HandleFunc("GET /big", func(r *Request) Reply { big.Add(1); return Text(200, "ran") })
			m.HandleFunc("GET /fields", func(r *Request) Reply {
				return Text(200, r.Header("x-before")+"|"+r.Header("x-after"))
			})
			ts := startServer(t, m, tc.cfg)
			limit := ts.cfg.MaxHeadBytes
			c := dialH2(t, ts.addr)

			c.get(1, "/slow?ms=50") // open while the oversized block is read

			// x-before and x-after go into both tables (literals with
			// incremental indexing); x-long, past the table's size, is
			// never indexed. Its Huffman code (5 bits an 'a') keeps the
			// block within twice the list, and the cut puts the field's
			// end, where the list is found too long, in the CONTINUATION.
			c.head("/big")
			for _, f := range []hpack.HeaderField{{Name: "x-before", Value: "b4"},
				{Name: "x-long", Value: strings.Repeat("a", limit*5/2)}, {Name: "x-after", Value: "af"}} {
				require.NoError(t, c.he.WriteField(f))
			}
			block := c.hb.Bytes()
			require.Less(t, len(block), 2*limit, "the block is past the bound on its bytes")
			cut := len(block) / 2
			require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3,
				BlockFragment: block[:cut], EndStream: true}))
			require.NoError(t, c.fr.WriteContinuation(3, true, block[cut:]))
			got := c.responses(1, 3)
			assert.Equal(t, "200 waited 50 ms", got[1])
			assert.Equal(t, "431 "+statusBody(431), got[3])

			c.hb.Reset()
			for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"},
				{":path", "/fields"}, {"x-before", "b4"}, {"x-after", "af"}} {
				require.NoError(t, c.he.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
			}
			require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5,
				BlockFragment: c.hb.Bytes(), EndStream: true, EndHeaders: true}))
			c.expect(5, "200", "b4|af")

			assert.Equal(t, int32(0), big.Load(), "the oversized request's handler ran")
			st := ts.Stats()
			assert.Equal(t, uint64(1), st.BadRequests)
			assert.Equal(t, uint64(0), st.Abusive)
			ts.atRest(t)
		})
	}
}

// responses reads the responses of streams ids, their frames in any
// order: each one's status and body, a space between.
func (c *h2Raw) responses(ids ...uint32) map[uint32]string {
	c.t.Helper()
	got := make(map[uint32]string)
	for open := len(ids); open > 0; {
		f := c.next()
		id := f.Header().StreamID
		require.Contains(c.t, ids, id, "a frame of another stream: %v", f)
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			got[id] += f.PseudoValue("status") + " "
		case *http2.DataFrame:
			got[id] += string(f.Data())
		default:
			c.t.Fatalf("unexpected frame %v", f)
		}
		if f.Header().Flags.Has(http2.FlagDataEndStream) { // HEADERS' END_STREAM too
			open--
		}
	}
	return got
}

// A field longer than the list, in a literal with incremental indexing:
// the decoder must read it whole, for the table (which it empties, being
// larger than the table: RFC 7541 §4.4), and it is past the list all the
// same: 431, and the connection goes on.
func TestH2HeaderTooLargeIndexed(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	c.head("/health")
	b := append(c.hb.Bytes(), 0x40) // a literal with incremental indexing, a new name
	b = appendHpackString(b, "x-long")
	b = appendHpackString(b, strings.Repeat("v", ts.cfg.MaxHeadBytes+100))
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:h2MaxFrame/2],
		EndStream: true}))
	require.NoError(t, c.fr.WriteContinuation(1, true, b[h2MaxFrame/2:]))
	c.expect(1, "431", statusBody(431))

	// The server's table is empty now, the client's not: a size update
	// to 0 empties both.
	c.he.SetMaxDynamicTableSize(0)
	c.he.SetMaxDynamicTableSize(4096)
	c.get(3, "/health")
	c.expect(3, "200", "ok")
	assert.Equal(t, uint64(1), ts.Stats().BadRequests)
	assert.Equal(t, uint64(0), ts.Stats().Abusive)
	ts.atRest(t)
}

// appendHpackString appends s as an HPACK string literal, without
// Huffman coding (RFC 7541 §5.2).
func appendHpackString(b []byte, s string) []byte {
	n := uint64(len(s))
	if n < 127 {
		return append(append(b, byte(n)), s...)
	}
	b = append(b, 127)
	for n -= 127; n >= 128; n >>= 7 {
		b = append(b, byte(n%128)|0x80)
	}
	return append(append(b, byte(n)), s...)
}

// A field longer than the list that ends in the HEADERS frame, with the
// block going on in a CONTINUATION (as a client that splits its block at
// SETTINGS_MAX_FRAME_SIZE sends it): the stream gets 431, the rest of the
// block is decoded for the table, and the connection goes on.
func TestH2HeaderTooLargeBeforeContinuation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"default", Config{}}, {"small arena", Config{ArenaSize: 2048}}} {
		t.Run(tc.name, func(t *testing.T) {
			m := testMux()
			m.HandleFunc("GET /fields", func(r *Request) Reply {
				return Text(200, r.Header("x-before")+"|"+r.Header("x-after"))
			})
			ts := startServer(t, m, tc.cfg)
			limit := ts.cfg.MaxHeadBytes
			c := dialH2(t, ts.addr)

			c.head("/big")
			for _, f := range []hpack.HeaderField{{Name: "x-before", Value: "b4"},
				{Name: "x-long", Value: strings.Repeat("a", limit*3/2)}} {
				require.NoError(t, c.he.WriteField(f))
			}
			cut := c.hb.Len() // x-long ends here: the list is found too long in HEADERS
			require.NoError(t, c.he.WriteField(hpack.HeaderField{Name: "x-after", Value: "af"}))
			block := c.hb.Bytes()
			require.Less(t, len(block), 2*limit)
			require.LessOrEqual(t, cut, h2MaxFrame)
			require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1,
				BlockFragment: block[:cut], EndStream: true}))
			require.NoError(t, c.fr.WriteContinuation(1, true, block[cut:]))
			f := c.next()
			if ga, ok := f.(*http2.GoAwayFrame); ok {
				t.Fatalf("GOAWAY %v: the connection ended", ga.ErrCode)
			}
			mh, ok := f.(*http2.MetaHeadersFrame)
			require.True(t, ok, "frame %v", f)
			require.Equal(t, "431", mh.PseudoValue("status"))
			c.expectBody(1, statusBody(431))

			c.hb.Reset()
			for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"},
				{":path", "/fields"}, {"x-before", "b4"}, {"x-after", "af"}} {
				require.NoError(t, c.he.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
			}
			require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3,
				BlockFragment: c.hb.Bytes(), EndStream: true, EndHeaders: true}))
			c.expect(3, "200", "b4|af") // x-after entered the table in the refused block's CONTINUATION
			assert.Equal(t, uint64(0), ts.Stats().Abusive)
		})
	}
}
