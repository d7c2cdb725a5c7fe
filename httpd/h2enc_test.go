package httpd

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2/hpack"
)

// newEncConn returns an h2conn with only what field needs: the encoder
// as startH2 sets it up.
func newEncConn() *h2conn {
	h := &h2conn{}
	h.enc = hpack.NewEncoder(&h.hb)
	h.enc.SetMaxDynamicTableSize(0)
	return h
}

// The cached encodings are the encoder's bytes: blocks written through
// field, fields repeated, the ring overflowed, long fields passed by,
// are byte for byte what a fresh encoder writes, and decode to the
// fields given.
func TestH2FieldCache(t *testing.T) {
	h, ref := newEncConn(), newEncConn()
	long := strings.Repeat("v", h2EncCacheMax)
	var all []hpack.HeaderField
	for i := range 40 {
		fields := []hpack.HeaderField{{Name: ":status", Value: strconv.Itoa(200 + i%3)},
			{Name: "content-type", Value: "text/plain; charset=utf-8"},
			{Name: "x-n", Value: strconv.Itoa(i % (h2EncCache + 3))}, {Name: "x-long", Value: long},
			{Name: "content-length", Value: "2"}}
		h.hb.b, ref.hb.b = h.hb.b[:0], ref.hb.b[:0]
		for _, f := range fields {
			h.field(f.Name, f.Value)
			require.NoError(t, ref.enc.WriteField(f))
		}
		require.Equal(t, ref.hb.b, h.hb.b, "block %d", i)
		all = append(all, fields...)
	}
	var got []hpack.HeaderField
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) { got = append(got, f) })
	var wire bytes.Buffer
	h2 := newEncConn()
	for _, f := range all {
		h2.field(f.Name, f.Value)
	}
	wire.Write(h2.hb.b)
	_, err := dec.Write(wire.Bytes())
	require.NoError(t, err)
	require.NoError(t, dec.Close())
	assert.Equal(t, all, got)
	assert.Equal(t, byte(0x20), h2.hb.b[0], "the table size update leads the first block")
	assert.Equal(t, 1, bytes.Count(h2.hb.b, []byte{0x20, 0x88}), "and only it")
}

// BenchmarkH2Field is a small response's fields through field (the
// cache) and straight through the encoder.
func BenchmarkH2Field(b *testing.B) {
	fields := []hpack.HeaderField{{Name: ":status", Value: "200"},
		{Name: "content-type", Value: "text/plain; charset=utf-8"}, {Name: "content-length", Value: "2"}}
	b.Run("cached", func(b *testing.B) {
		h := newEncConn()
		for b.Loop() {
			h.hb.b = h.hb.b[:0]
			for _, f := range fields {
				h.field(f.Name, f.Value)
			}
		}
	})
	b.Run("encoder", func(b *testing.B) {
		h := newEncConn()
		for b.Loop() {
			h.hb.b = h.hb.b[:0]
			for _, f := range fields {
				_ = h.enc.WriteField(f)
			}
		}
	})
}
