package httpd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/valkyria/aio"
)

// FromHTTP returns a Handler that runs h, a net/http handler, on the
// loop's Work pool, so that handlers written for net/http (which block)
// serve here too. The *http.Request's context is cancelled by the same
// events as a native handler's handle: the client going away, Shutdown's
// deadline. Its body is the request's: buffered, or streamed from the
// connection with flow control (reading pauses while h does not read).
// The response is buffered whole and sent when h returns (Flush sends
// nothing early); a panic in h answers 500.
//
// Everything h gets is copied out of the request's arena: h runs on
// another goroutine and may outlive the request once it is cancelled.
func FromHTTP(h http.Handler) Handler {
	return HandlerFunc(func(r *Request) Reply {
		req, err := httpRequest(r)
		if err != nil {
			return Reply{resp: errResponse(400)}
		}
		return Later(aio.Work(r.Loop(), func(ctx context.Context) (Response, error) {
			if p, ok := req.Body.(*bodyPipe); ok { // a reader waiting for a client gone must wake
				defer context.AfterFunc(ctx, func() { _ = p.Close() })()
			}
			w := &responseWriter{header: make(http.Header)}
			h.ServeHTTP(w, req.WithContext(ctx))
			return w.response(), nil
		}))
	})
}

// httpRequest makes the *http.Request of r, with copies of everything.
func httpRequest(r *Request) (*http.Request, error) {
	target := strings.Clone(r.Target())
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, err
	}
	req := &http.Request{
		Method:     strings.Clone(r.Method()),
		URL:        u,
		Proto:      strings.Clone(r.Proto()),
		ProtoMajor: 1,
		ProtoMinor: r.ProtoMinor(),
		Header:     make(http.Header, len(r.head.Fields)),
		Host:       strings.Clone(r.Host()),
		RequestURI: target,
		RemoteAddr: r.RemoteAddr().String(),
	}
	for name, value := range r.Headers() {
		req.Header.Add(name, strings.Clone(value)) // Add canonicalises (and copies) the name
	}
	req.ContentLength = r.body.length
	if r.body.length < 0 {
		req.TransferEncoding = []string{"chunked"}
	}
	if b, ok := r.Body().Bytes(); ok {
		req.Body = io.NopCloser(bytes.NewReader(bytes.Clone(b)))
	} else {
		req.Body = newBodyPipe(r)
	}
	if r.routed {
		req.Pattern = strings.Clone(r.Pattern())
		for i := range r.params.Len() {
			req.SetPathValue(r.params.Name(i), string(r.params.Value(i)))
		}
	}
	return req, nil
}

// bodyPipe is a streamed request body as an io.ReadCloser for a goroutine:
// the loop appends copies of what arrives (OnData), and pauses the body
// while more than pipeHigh bytes wait; Read resumes it below pipeLow.
type bodyPipe struct {
	l   *aio.Loop
	r   *Request // used on the loop only, while the request of seq lives
	seq uint64

	mu     sync.Mutex
	cond   sync.Cond
	chunks [][]byte
	n      int  // bytes waiting
	end    bool // the last bytes arrived
	closed bool // Close was called
	paused bool
}

const (
	pipeHigh = 256 << 10
	pipeLow  = 64 << 10
)

func newBodyPipe(r *Request) *bodyPipe {
	p := &bodyPipe{l: r.ls.l, r: r, seq: r.seq}
	p.cond.L = &p.mu
	r.Body().OnData(p.onData)
	return p
}

// onData runs on the loop with the next bytes of the body.
func (p *bodyPipe) onData(b []byte, end bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && len(b) > 0 {
		p.chunks = append(p.chunks, bytes.Clone(b))
		p.n += len(b)
	}
	p.end = p.end || end
	if p.n > pipeHigh && !p.end && !p.paused {
		p.paused = true
		p.r.Body().Pause()
	}
	p.cond.Broadcast()
}

// Read reads what has arrived, waiting for more; io.EOF after the end.
// A request that ends before its body (the client went away) ends the
// body with io.ErrUnexpectedEOF.
func (p *bodyPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.chunks) == 0 && !p.end && !p.closed {
		p.cond.Wait()
	}
	if len(p.chunks) == 0 {
		if p.closed && !p.end {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, io.EOF
	}
	n := copy(b, p.chunks[0])
	if n == len(p.chunks[0]) {
		p.chunks[0] = nil
		p.chunks = p.chunks[1:]
	} else {
		p.chunks[0] = p.chunks[0][n:]
	}
	p.n -= n
	if p.paused && p.n < pipeLow {
		p.paused = false
		_ = p.l.Post(p.resume)
	}
	return n, nil
}

// resume resumes the body on the loop, if its request still lives.
func (p *bodyPipe) resume() {
	if p.r.live(p.seq) {
		p.r.Body().Resume()
	}
}

// Close makes the reader stop; what arrives later is dropped.
func (p *bodyPipe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.chunks, p.n = nil, 0
	if p.paused {
		p.paused = false
		_ = p.l.Post(p.resume)
	}
	p.cond.Broadcast()
	return nil
}

// responseWriter buffers a net/http handler's response.
type responseWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	return w.body.Write(b)
}

// response is the Response of what the handler wrote.
func (w *responseWriter) response() Response {
	if w.status == 0 {
		w.status = 200
	}
	var fields []Field
	for name, values := range w.header {
		switch http.CanonicalHeaderKey(name) {
		case "Content-Length", "Transfer-Encoding", "Connection", "Date":
			continue // the server's own
		}
		for _, v := range values {
			fields = append(fields, Field{name, v})
		}
	}
	if w.header.Get("Content-Type") == "" && w.body.Len() > 0 {
		fields = append(fields, Field{"Content-Type", http.DetectContentType(w.body.Bytes())})
	}
	return Response{Status: w.status, Header: fields, Body: w.body.Bytes()}
}
