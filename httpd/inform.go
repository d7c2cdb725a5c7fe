package httpd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd/internal/h1"
	"golang.org/x/net/http/httpguts"
)

// Interim responses (RFC 9110 §15.2): a 1xx sent before a request's final
// response, such as 103 Early Hints (RFC 8297), which lets a client start
// fetching what the final response will link to while the handler is
// still at work.

// ErrHeadSent is what Request.Inform returns once the request's final
// response is decided (the handler returned it, its handle ended, or it
// began a Stream): an interim response cannot follow it.
var ErrHeadSent = errors.New("httpd: interim response after the final one")

// Inform sends an interim response with status (102 to 199; 100 and 101
// are refused) and header before the request's final response: 103 Early
// Hints with Link fields, say. It is sent at once, and the final response follows it.
//
// It is not sent, and Inform returns nil, where the protocol has no place
// for it: to an HTTP/1.0 client (RFC 9110 §15.2), and on HTTP/1.1 while
// the request's turn has not come (the responses of requests pipelined
// before it are not all written: a hint sent after them would come too
// late to help). 100 Continue is the server's own (it goes out when the
// handler reads a body its client holds back for it) and 101 Switching
// Protocols is not served: both are refused, as is a field name or value
// that is not valid, or one that frames a message or belongs to its
// connection (Content-Length, Transfer-Encoding, Connection, Keep-Alive,
// Proxy-Connection, Upgrade); these errors wrap aio.ErrInvalidArgument.
// Once the final response is decided Inform returns ErrHeadSent, and once
// the client has gone away ErrClientGone.
//
// The fields are sent with the interim response only: those the final
// response should carry too must be in its own header. On the loop,
// from the handler or from what it started, until its response is given.
func (r *Request) Inform(status int, header []Field) error {
	r.checkLoop()
	if status < 102 || status > 199 {
		return fmt.Errorf("httpd: Inform with status %d, not 102 to 199: %w", status, aio.ErrInvalidArgument)
	}
	for _, f := range header {
		if err := checkInterimField(f); err != nil {
			return err
		}
	}
	switch {
	case r.gone || r.released || r.eng.conn().Closed().Status().Terminal():
		return ErrClientGone
	case r.replied || r.written || r.hdone || r.stream.p != nil:
		return ErrHeadSent
	}
	return r.eng.inform(r, status, header)
}

// checkInterimField checks one field of an interim response.
func checkInterimField(f Field) error {
	if !httpguts.ValidHeaderFieldName(f.Name) || !httpguts.ValidHeaderFieldValue(f.Value) {
		return fmt.Errorf("httpd: Inform with an invalid field %q: %w", f.Name, aio.ErrInvalidArgument)
	}
	if interimOwned(f.Name) {
		return fmt.Errorf("httpd: Inform with a %s field: %w", f.Name, aio.ErrInvalidArgument)
	}
	return nil
}

// interimOwned reports whether name is a field no interim response may
// carry: one that frames a message, or one of its connection's.
func interimOwned(name string) bool {
	lower := strings.ToLower(name) // not a hot path: a copy only when name has capitals
	return lower == "content-length" || connectionField(lower)
}

// inform writes r's interim response if its turn has come (Request.Inform
// checked the rest). The write queue keeps it before the final response.
func (hc *h1conn) inform(r *Request, status int, header []Field) error {
	switch {
	case hc.closed || hc.aborted:
		return ErrClientGone
	case r.head.Minor == 0 || r != hc.qhead || hc.finished:
		return nil
	}
	fields := hc.ls.fields[:0]
	for _, f := range header {
		fields = append(fields, h1.Field{Name: strBytes(f.Name), Value: strBytes(f.Value)})
	}
	b, err := h1.AppendResponse(hc.ls.wbuf[:0], &h1.Response{Status: status, Body: h1.BodyNone, Fields: fields})
	clear(fields) // keep no view of the handler's fields
	hc.ls.fields = fields
	if err == nil {
		_, _ = hc.c.Write(b)
	}
	hc.ls.wbuf = b[:0]
	return err
}

// inform writes st's interim response: a HEADERS frame without
// END_STREAM, before the one that carries the final head.
func (h *h2conn) inform(r *Request, status int, header []Field) error {
	st := r.h2s
	switch {
	case st == nil || st.reset || h.closed || h.dead:
		return ErrClientGone
	case st.headersSent:
		return ErrHeadSent
	}
	h.hb.b = h.hb.b[:0]
	h.field(":status", bytesStr(strconv.AppendInt(h.num[:0], int64(status), 10)))
	for _, f := range header {
		name, _ := h.lower(f.Name) // checked: checkInterimField
		h.field(name, f.Value)
	}
	h.writeBlock(st.id, false)
	h.flush()
	return nil
}
