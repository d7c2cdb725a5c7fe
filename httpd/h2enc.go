package httpd

import "golang.org/x/net/http2/hpack"

// Response header fields, encoded once. The connection's encoder has no
// dynamic table, so a field's encoding depends on nothing else in its
// block (but for the table size update the encoder puts before the
// first field it ever writes, which is never cached): the encodings of
// the fields a connection writes again and again (:status, content-type,
// content-length, a handler's fixed headers) are kept and copied, which
// saves the encoder's table search and Huffman coding for each. Before,
// hpack's WriteField was about 8% of a small HTTP/2 response's CPU.

const (
	h2EncCache    = 8  // the fields kept
	h2EncCacheMax = 96 // the longest field kept (name and value)
)

// h2encCache is a connection's encoded fields, a ring. Owned by the loop.
type h2encCache struct {
	ents [h2EncCache]h2encField
	next int // the slot to replace next
}

// h2encField is one field and its encoding; the buffers are the slot's
// own, reused from field to field.
type h2encField struct{ name, value, enc []byte }

// field encodes one header field into h.hb. The encoder keeps neither
// string: views are fine.
func (h *h2conn) field(name, value string) {
	if len(name)+len(value) > h2EncCacheMax {
		_ = h.enc.WriteField(hpack.HeaderField{Name: name, Value: value})
		return
	}
	c := &h.encCache
	for i := range c.ents {
		if e := &c.ents[i]; string(e.value) == value && string(e.name) == name && len(e.enc) > 0 {
			h.hb.b = append(h.hb.b, e.enc...)
			return
		}
	}
	n := len(h.hb.b)
	_ = h.enc.WriteField(hpack.HeaderField{Name: name, Value: value})
	enc := h.hb.b[n:]
	if len(enc) == 0 || enc[0]&0xe0 == 0x20 { // a dynamic table size update leads it
		return
	}
	e := &c.ents[c.next]
	c.next = (c.next + 1) % h2EncCache
	e.name = append(e.name[:0], name...)
	e.value = append(e.value[:0], value...)
	e.enc = append(e.enc[:0], enc...)
}
