package httpd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOwnFields: the server's own field lists are taken as checked, and
// nothing else is: not a copy of one (the handler's), nor a shared list
// whose field a handler has changed.
func TestOwnFields(t *testing.T) {
	for _, hdr := range [][]Field{textHeader, jsonHeader, octetHeader} {
		own := ownFields(hdr)
		require.Len(t, own, 1, "%v", hdr)
		assert.Equal(t, hdr[0].Name, string(own[0].Name))
		assert.Equal(t, hdr[0].Value, string(own[0].Value))
	}
	assert.Nil(t, ownFields([]Field{textField}), "a copy")
	assert.Nil(t, ownFields(textHeader[:0]))
	assert.Nil(t, ownFields(append(textHeader[:1:1], textField)), "a list made from one")

	saved := textHeader[0]
	t.Cleanup(func() { textHeader[0] = saved })
	textHeader[0].Value = "text/plain\r\nX: y"
	assert.Nil(t, ownFields(textHeader), "changed by a handler: checked again")
}
