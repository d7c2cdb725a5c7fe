package httpd

import (
	"crypto/tls"
	"errors"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/valkyria/aio"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The HTTP/2 engine (RFC 9113), h2c by prior knowledge: a connection whose
// first bytes are the client preface is handed over by the HTTP/1.1 engine
// (h1conn.split) to an h2conn, on its loop, for the rest of its life.
//
// Reading goes through the connection's framer (aio.Conn.OnFrame) with a
// split that cuts whole frames by the 9-byte header's length (a HEADERS
// frame with its CONTINUATION frames as one piece), so that x/net/http2's
// Framer, reading from that piece, never sees a partial frame. Header
// blocks are decoded with the connection's one hpack decoder, in arrival
// order (refused streams too: the table stays in step): h2block.go.
//
// Frames to send are appended to the connection's out buffer (the Framer
// writes there) and flushed to the socket at the end of each event: a
// read, a handler's end, a stream's write.
//
// The h1conn the connection began as stays its member of the loop's lists
// (conns, the timeouts): Shutdown and the sweep reach the h2conn through
// it, and its onClose does the loop's accounting.

// What we advertise, and how we read.
const (
	h2DefaultWindow = 65535           // every window's size until SETTINGS or WINDOW_UPDATE change it
	h2DefaultFrame  = 16384           // the largest frame until SETTINGS_MAX_FRAME_SIZE changes it
	h2MaxFrame      = h2DefaultFrame  // SETTINGS_MAX_FRAME_SIZE: the default, which every client sends within
	h2StreamWindow  = h2DefaultWindow // the initial stream window we grant (the default)
	h2ConnWindow    = 1 << 20         // the connection window we grant
	h2MaxStreams    = 256             // SETTINGS_MAX_CONCURRENT_STREAMS, at most (loopState.h2Streams)
	h2MaxWindow     = 1<<31 - 1
	h2OutKeep       = 64 << 10  // the out buffer a flush keeps; larger, it is let go
	h2OutFlush      = 32 << 10  // sendData flushes past this, so the buffer stays within h2OutKeep
	h2TurnMax       = 256 << 10 // DATA one stream sends in one go before the others (and the loop) have their turn
	h2ResetMemory   = 32        // the streams reset lately that a connection remembers (h2conn.resets)
)

// h2conn is a connection's HTTP/2 state. Owned by its loop.
type h2conn struct {
	hc *h1conn // the connection's membership in the loop's lists
	ls *loopState
	c  *aio.Conn

	fr       *http2.Framer
	blk      h2block        // the header block being read, and the hpack decoder (h2block.go)
	in       h2reader       // the piece split cut, which the Framer reads
	out      h2writer       // frames to send, flushed at the end of each event
	enc      *hpack.Encoder // no dynamic table: encoded blocks refer to nothing that may change
	hb       h2writer       // the header block being encoded
	encCache h2encCache     // response fields encoded lately (h2enc.go)

	streams map[uint32]*h2stream
	open    int         // streams that count toward ls.h2Streams: in streams, not reset (h2stream.countOut)
	waiting []*h2stream // streams with DATA held by the connection's window or a full write queue
	// queueFull: a Stream was told Full because of the write queue, since
	// the last drain: the drain looks for the Full streams (onDrain).
	queueFull bool
	// turnPosted: a stream used up its turn (h2TurnMax) with more to send
	// and the kernel still taking it: the waiting streams go on from a
	// job posted to the loop, after what else it has to do.
	turnPosted bool
	// headTimed: split holds a header block still to be finished, and the
	// connection is under HeaderTimeout for it (timeHead).
	headTimed bool
	lastID    uint32 // the highest stream the client opened

	// The streams reset lately, either side, once forgotten: a ring of
	// ids, the top bit set on those we reset. Frames the client sent
	// before our RST_STREAM reached it are ignored (RFC 9113 §5.1 closed,
	// §5.4.2); frames after its own RST_STREAM are a stream error.
	resets  [h2ResetMemory]uint32
	nresets uint32 // resets written in all: the next slot is nresets % h2ResetMemory

	// The streams reset after an early answer (resetEarly), whose frames
	// may still cross our RST_STREAM, however many: forgotten once the
	// client has answered a PING sent after their resets (crossSent of
	// them, the PING out), as by then it has read those resets.
	crossing  []uint32
	crossSent int
	crossPing bool

	sendWin      int64  // the connection window the client grants us
	peerInit     int64  // the client's SETTINGS_INITIAL_WINDOW_SIZE
	peerMaxFrame int    // the client's SETTINGS_MAX_FRAME_SIZE
	recvWin      int64  // what the client may still send on the connection
	recvUnacked  int64  // bytes received and not yet given back
	lname        []byte // a response field name, lowercased

	num     [20]byte    // a number in a response head, encoded at once
	dateRaw []byte      // the Date value dateEnc encodes
	dateEnc []byte      // the Date field, encoded
	lim     h2limits    // the budgets against hostile clients (h2limits.go)
	ws      h2stall     // the windows' stalls: WriteTimeout for what they hold (h2stall.go)
	bt      h2bodyTimer // the buffered bodies' pauses and BodyTimeout (h2bodytime.go)

	settings bool // the client's first SETTINGS arrived
	preface  bool // the client preface is still to come (after a 101 to h2c: h2upgrade.go)
	goaway   bool // we sent GOAWAY: no new streams
	dead     bool // a connection error: nothing more is read or sent
	closed   bool

	shutting  bool                  // Shutdown's first GOAWAY is out: the final one follows (shutdown)
	shutTimer *aio.Handle[struct{}] // shutting: the bound on the PING round trip
}

// restQ is the timeout a connection with no stream waits under: IdleTimeout,
// once the client's first SETTINGS have arrived, and HeaderTimeout
// before, as a client that has sent the preface alone has not finished
// beginning (x/net's server allows 2 s): an HTTP/1.1 head is bounded so.
func (h *h2conn) restQ() *connList {
	if !h.settings {
		return &h.ls.headQ
	}
	return &h.ls.idleQ
}

// h2reader is the Framer's reader: the frames split found.
type h2reader struct{ b []byte }

func (r *h2reader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// h2writer collects what the Framer and the hpack encoder write.
type h2writer struct{ b []byte }

func (w *h2writer) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// Whether bytes begin with the HTTP/2 client preface (h2Preface).
const (
	prefaceNo = iota
	prefacePart
	prefaceWhole
)

// h2PrefaceLen is the length of the client preface.
const h2PrefaceLen = len(http2.ClientPreface)

// h2Preface tells whether data is the client preface (it may be followed
// by more), or the beginning of it.
func h2Preface(data []byte) int {
	const p = http2.ClientPreface
	n := min(len(data), len(p))
	if string(data[:n]) != p[:n] {
		return prefaceNo
	}
	if n < len(p) {
		return prefacePart
	}
	return prefaceWhole
}

// startH2 hands hc's connection, whose preface split has just consumed
// (or which has just sent a 101 to h2c), to the HTTP/2 engine. On the
// loop, in hc's frame callback.
func (hc *h1conn) startH2() *h2conn {
	ls := hc.ls
	h := &h2conn{hc: hc, ls: ls, c: hc.c, streams: make(map[uint32]*h2stream),
		sendWin: h2DefaultWindow, peerInit: h2DefaultWindow, peerMaxFrame: h2DefaultFrame, recvWin: h2ConnWindow}
	hc.h2 = h
	hc.rstate = rsDiscard
	h.fr = http2.NewFramer(&h.out, &h.in)
	h.fr.SetMaxReadFrameSize(h2MaxFrame)
	h.fr.SetReuseFrames() // a DataFrame is done with when onData returns
	h.initBlock(uint32(ls.cfg.MaxHeadBytes))
	h.enc = hpack.NewEncoder(&h.hb)
	h.enc.SetMaxDynamicTableSize(0)
	_ = h.fr.WriteSettings(
		http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: uint32(ls.h2Streams)},
		http2.Setting{ID: http2.SettingMaxFrameSize, Val: h2MaxFrame},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(ls.cfg.MaxHeadBytes)},
	)
	_ = h.fr.WriteWindowUpdate(0, h2ConnWindow-h2DefaultWindow)
	h.flush()
	hc.setTimeout(h.restQ())
	_ = hc.c.OnClose(h.onClose)
	_ = hc.c.OnEOF(h.onEOF)
	_ = hc.c.OnDrain(h.onDrain)
	_ = hc.c.OnFrame(h.split, h.readMax(), h.onFrame)
	if ls.draining {
		h.shutdown()
	}
	return h
}

// frameLen returns the payload length in a frame header.
func frameLen(b []byte) int { return int(b[0])<<16 | int(b[1])<<8 | int(b[2]) }

// split is the framer's SplitFunc: every whole frame in data, a HEADERS
// frame only with the CONTINUATION frames that end its block. A frame
// longer than we read is passed on as its header alone: the Framer
// refuses it (FRAME_SIZE_ERROR).
func (h *h2conn) split(data []byte, _ bool) (int, []byte, error) {
	if h.lim.flood {
		return h.splitFlood(data, 0) // the connection is ending: nothing more is read
	}
	n := 0
	if h.preface { // after an upgrade: the preface leads the first frames
		switch h2Preface(data) {
		case prefacePart:
			return 0, nil, nil
		case prefaceNo:
			return 0, nil, errBadPreface
		}
		h.preface = false
		n = h2PrefaceLen
	}
	start := n
	for len(data)-n >= 9 {
		f := data[n:]
		l := frameLen(f)
		if l > h2MaxFrame {
			n += 9
			break
		}
		end := 9 + l
		if len(f) < end {
			break
		}
		if t := http2.FrameType(f[3]); (t == http2.FrameHeaders || t == http2.FramePushPromise) &&
			http2.Flags(f[4])&http2.FlagHeadersEndHeaders == 0 {
			if h.blockTooLong(f) {
				return h.splitFlood(data, n)
			}
			k := continuationEnd(f[end:])
			if k < 0 {
				h.timeHead() // the rest of the block is still to come
				break
			}
			end += k
		}
		n += end
	}
	if n == 0 {
		return 0, nil, nil
	}
	return n, data[start:n], nil
}

// continuationEnd returns the length of the CONTINUATION frames at the
// start of b through the one with END_HEADERS, -1 when they have not all
// arrived. A frame that is not a CONTINUATION stops them: the Framer
// refuses it.
func continuationEnd(b []byte) int {
	n := 0
	for {
		if len(b)-n < 9 {
			return -1
		}
		f := b[n:]
		l := frameLen(f)
		if http2.FrameType(f[3]) != http2.FrameContinuation || l > h2MaxFrame {
			return n
		}
		if len(f) < 9+l {
			return -1
		}
		n += 9 + l
		if http2.Flags(f[4])&http2.FlagContinuationEndHeaders != 0 {
			return n
		}
	}
}

// onFrame reads the frames split found.
func (h *h2conn) onFrame(_ *aio.Conn, frames []byte) {
	if h.lim.flood {
		h.calm()
	}
	h.in.b = frames
	for len(h.in.b) > 0 && !h.dead && !h.closed {
		typ := http2.FrameType(h.in.b[3]) // split passes whole frames: the header is there
		f, err := h.fr.ReadFrame()
		if err != nil {
			h.frameError(err, typ)
			continue
		}
		h.process(f)
	}
	if h.blk.open { // split passes whole blocks: the Framer would have hit EOF
		h.blk.open = false
		h.fail(http2.ErrCodeProtocol)
	}
	h.in.b = nil
	h.flush()
}

// frameError answers the Framer's error reading a frame of type typ.
// Of its two stream errors, these must end the connection, where
// resetting the stream would not do: a HEADERS frame's padding longer
// than its payload (RFC 9113 §6.2 makes it a connection error), whose
// header block is then never decoded, so the decoder's table would no
// longer be the client's and a later request would be read with the
// wrong fields (§4.3); and a WINDOW_UPDATE of zero on a stream still
// idle, a frame §5.1 makes a connection error there and §6.4 forbids
// answering with RST_STREAM.
func (h *h2conn) frameError(err error, typ http2.FrameType) {
	var se http2.StreamError
	if errors.As(err, &se) {
		switch {
		case typ == http2.FrameHeaders || typ == http2.FrameContinuation:
			h.fail(http2.ErrCodeProtocol)
			return
		case se.StreamID > h.lastID:
			h.fail(http2.ErrCodeProtocol)
			return
		}
	}
	h.readError(err)
}

// readError answers an error of the Framer: a stream error resets the
// stream, anything else ends the connection.
func (h *h2conn) readError(err error) {
	var se http2.StreamError
	var ce http2.ConnectionError
	switch {
	case errors.As(err, &se):
		if se.StreamID > h.lastID && se.StreamID%2 == 1 {
			h.lastID = se.StreamID // a stream refused as it opened is used up
		}
		h.resetStream(se.StreamID, se.Code)
	case errors.As(err, &ce):
		h.fail(http2.ErrCode(ce))
	case errors.Is(err, http2.ErrFrameTooLarge):
		h.fail(http2.ErrCodeFrameSize)
	default:
		h.fail(http2.ErrCodeProtocol)
	}
}

// process acts on one frame.
func (h *h2conn) process(f http2.Frame) {
	if !h.settings {
		sf, ok := f.(*http2.SettingsFrame)
		if !ok || sf.IsAck() {
			h.fail(http2.ErrCodeProtocol) // the preface's SETTINGS must come first
			return
		}
	}
	switch f := f.(type) {
	case *http2.SettingsFrame:
		h.onSettings(f)
	case *http2.HeadersFrame:
		h.onHeadersFrame(f)
	case *http2.ContinuationFrame:
		h.onContinuation(f)
	case *http2.DataFrame:
		h.onData(f)
	case *http2.WindowUpdateFrame:
		h.onWindowUpdate(f)
	case *http2.PingFrame:
		switch {
		case !f.IsAck():
			if h.spendControl() {
				_ = h.fr.WritePing(true, f.Data)
			}
		case h.shutting && f.Data == h2ShutdownPing:
			h.drain() // the streams sent before the first GOAWAY have arrived
		case h.crossPing && f.Data == h2CrossingPing:
			h.crossed()
		}
	case *http2.RSTStreamFrame:
		h.onReset(f)
	case *http2.GoAwayFrame:
		h.onGoAway(f)
	case *http2.PriorityFrame:
		if f.StreamDep == f.StreamID { // a stream cannot depend on itself (RFC 7540 §5.3.1)
			h.resetStream(f.StreamID, http2.ErrCodeProtocol)
		}
		// otherwise accepted and ignored
	case *http2.PushPromiseFrame:
		h.fail(http2.ErrCodeProtocol)
	}
	// frames of unknown types are ignored (RFC 9113 §4.1)
}

// onSettings applies the client's settings and acknowledges them.
func (h *h2conn) onSettings(f *http2.SettingsFrame) {
	if f.IsAck() {
		return
	}
	if !h.settings {
		h.settings = true
		h.untimeSettings() // HeaderTimeout bounded the wait for them (restQ)
	}
	if f.NumSettings() > h2MaxSettings {
		h.calm()
		return
	}
	init := h.peerInit
	if err := h.applySettings(f.ForeachSetting); err != nil {
		h.readError(err)
		return
	}
	if !h.spendControl() {
		return
	}
	_ = h.fr.WriteSettingsAck()
	if h.peerInit <= init {
		return // no stream window grew: nothing held can go now (most SETTINGS change none)
	}
	for _, st := range h.streams {
		if len(st.out) > st.off && !st.reset {
			h.sendData(st)
		}
	}
}

// applySettings applies the client's settings, each in order: a SETTINGS
// frame's (ForeachSetting), or the HTTP2-Settings of an upgrade (before
// any stream). SETTINGS_INITIAL_WINDOW_SIZE moves every stream's window
// (RFC 9113 §6.9.2) in one pass once all are read, however often they
// name it: a window past 2^31-1 at any step, the largest, is a
// FLOW_CONTROL_ERROR. Moved for each, a frame of thousands cost a pass
// over the streams each; a frame that names no value above the old one
// and leaves it as it was costs none (a higher value on the way could
// overflow a window, which the pass checks).
func (h *h2conn) applySettings(each func(func(http2.Setting) error) error) error {
	init, top, named := h.peerInit, int64(0), false
	err := each(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingInitialWindowSize:
			h.peerInit, named = int64(s.Val), true
			top = max(top, h.peerInit)
		case http2.SettingMaxFrameSize:
			h.peerMaxFrame = int(s.Val)
		}
		return nil
	})
	if err != nil || !named || top <= init && h.peerInit == init {
		return err // no window moves, and none can have gone past 2^31-1
	}
	for _, st := range h.streams {
		if st.sendWin+top-init > h2MaxWindow {
			return http2.ConnectionError(http2.ErrCodeFlowControl)
		}
		st.sendWin += h.peerInit - init
	}
	return nil
}

// onWindowUpdate opens a window of ours.
func (h *h2conn) onWindowUpdate(f *http2.WindowUpdateFrame) {
	inc := int64(f.Increment)
	if f.StreamID == 0 {
		h.sendWin += inc
		if h.sendWin > h2MaxWindow {
			h.fail(http2.ErrCodeFlowControl)
			return
		}
		h.sendWaiting()
		h.connSent()
		return
	}
	st := h.streams[f.StreamID]
	if st == nil {
		if f.StreamID > h.lastID {
			h.fail(http2.ErrCodeProtocol) // an idle stream
		}
		return // a closed one: late, ignored
	}
	st.sendWin += inc
	if st.sendWin > h2MaxWindow {
		h.resetStream(st.id, http2.ErrCodeFlowControl)
		return
	}
	h.sendData(st)
}

// onReset: the client reset a stream: its handler is cancelled, and
// nothing more is sent on it.
func (h *h2conn) onReset(f *http2.RSTStreamFrame) {
	st := h.streams[f.StreamID]
	if st == nil {
		if f.StreamID > h.lastID {
			h.fail(http2.ErrCodeProtocol) // an idle stream
		}
		h.noteReset(f.StreamID, false)
		return
	}
	if !h.spendReset() {
		return
	}
	st.remoteDone = true
	st.peerReset = true
	h.noteReset(st.id, false)
	h.abortStream(st)
}

// reset bits in h2conn.resets
const resetOurs = 1 << 31 // we sent the RST_STREAM

// noteReset remembers that stream id was reset, by us (ours) or by the
// client, replacing the oldest memory.
func (h *h2conn) noteReset(id uint32, ours bool) {
	if ours {
		id |= resetOurs
	}
	h.resets[h.nresets%h2ResetMemory] = id
	h.nresets++
}

// lateReset tells whether stream id was reset lately, and whether by us
// (the latest memory of it counts).
func (h *h2conn) lateReset(id uint32) (known, ours bool) {
	if slices.Contains(h.crossing, id) {
		return true, true
	}
	for i := range min(h.nresets, h2ResetMemory) {
		v := h.resets[(h.nresets-1-i)%h2ResetMemory]
		if v&^resetOurs == id {
			return true, v&resetOurs != 0
		}
	}
	return false, false
}

// closedFrame answers DATA or HEADERS on a stream the client may no
// longer send on (st nil: forgotten, or never opened below lastID). On a
// stream we reset, it is ignored: the client sent it before our
// RST_STREAM arrived. On a stream half-closed (remote) it resets the
// stream; otherwise (the client reset it, or it closed long ago) it is
// answered with RST_STREAM(STREAM_CLOSED) once, after which the stream
// counts as reset by us and more frames on it are ignored: a client gets
// at most one answer per stream it misuses while it is remembered.
func (h *h2conn) closedFrame(st *h2stream, id uint32) {
	switch {
	case st != nil && !st.reset:
		h.resetStream(id, http2.ErrCodeStreamClosed)
	case st != nil && !st.peerReset:
	case st != nil:
		st.peerReset = false
		_ = h.fr.WriteRSTStream(id, http2.ErrCodeStreamClosed)
	default:
		if known, ours := h.lateReset(id); !known || !ours {
			h.resetStream(id, http2.ErrCodeStreamClosed)
		}
	}
}

// onGoAway: the client is going away. With an error its streams are
// abandoned: the connection closes, which cancels them; with NO_ERROR
// they finish and no new one is taken. An unknown code must not trigger
// special behaviour (RFC 9113 §7), so it is taken as NO_ERROR: a drain
// ending in a lingering close, where closing at once would reset the
// connection on the frames that follow the GOAWAY (h2spec 7.1 sends a
// PING after it, and failed on the reset once in four runs here).
func (h *h2conn) onGoAway(f *http2.GoAwayFrame) {
	if f.ErrCode != http2.ErrCodeNo && f.ErrCode <= http2.ErrCodeHTTP11Required {
		h.dead = true
		h.c.Close()
		return
	}
	h.drain()
}

// fail ends the connection for an error of the client's: GOAWAY with
// code, then the connection closes once it is written, which cancels
// every stream's handler.
func (h *h2conn) fail(code http2.ErrCode) {
	if h.dead || h.closed {
		return
	}
	h.goAwayDead(code)
	h.closeFlushed()
}

// goAwayDead writes GOAWAY(last stream, code) and flushes it: the
// connection is dead, nothing more is read or sent.
func (h *h2conn) goAwayDead(code http2.ErrCode) {
	_ = h.fr.WriteGoAway(h.lastID, code, nil)
	h.dead = true
	h.flush()
}

// closeFlushed closes the connection once what it wrote has reached the
// kernel.
func (h *h2conn) closeFlushed() {
	c := h.c
	aio.Finally(c.Flush(), func() { c.Close() })
}

// h2CrossingPing is the PING data of resetEarly's round trip.
var h2CrossingPing = [8]byte{'c', 'r', 'o', 's', 's', 'i', 'n', 'g'}

// h2CrossingMax bounds the streams reset early that a connection
// remembers while its client has not answered the PING after them; past
// it the oldest are forgotten (the ring of resets may still know them).
const h2CrossingMax = 1024

// resetEarly ends st, whose response is whole while the client is still
// sending its body: RST_STREAM(NO_ERROR) asks the client to stop (RFC
// 9113 §8.1, as net/http does), and the stream is forgotten. The reset
// spends a control frame, as the server's own.
func (h *h2conn) resetEarly(st *h2stream) { h.resetCrossed(st.id, http2.ErrCodeNo, true) }

// refuseStream refuses stream id (REFUSED_STREAM) as its HEADERS arrive;
// ours: for the server's own shortage (resetWith); ended: the HEADERS
// ended the stream, so nothing of it can cross the refusal.
func (h *h2conn) refuseStream(id uint32, ours, ended bool) {
	if ended {
		h.resetWith(id, http2.ErrCodeRefusedStream, ours)
	} else {
		h.resetCrossed(id, http2.ErrCodeRefusedStream, ours)
	}
}

// resetCrossed resets stream id (resetWith) while its client may still
// be sending on it: its frames that cross the reset are ignored until a
// PING sent after it comes back (crossing), not only while the ring of
// resets remembers it. RFC 9113 §5.1 has frames on a stream we reset
// ignored: a client that uploads on many streams at once, to handlers
// that answer early or through an arena shortage that refuses them, is
// neither answered STREAM_CLOSED for the DATA in flight (which would
// spend its reset budget for no fault of its own) nor failed for their
// trailers.
func (h *h2conn) resetCrossed(id uint32, code http2.ErrCode, ours bool) {
	if !h.resetWith(id, code, ours) {
		return
	}
	if len(h.crossing) == h2CrossingMax {
		h.crossing = slices.Delete(h.crossing, 0, 1)
		h.crossSent = max(h.crossSent-1, 0)
	}
	h.crossing = append(h.crossing, id)
	if !h.crossPing {
		h.pingCrossing()
	}
}

// pingCrossing sends the PING whose answer ends the memory of the early
// resets so far (crossed).
func (h *h2conn) pingCrossing() {
	if h.spendControl() {
		_ = h.fr.WritePing(false, h2CrossingPing)
		h.crossPing, h.crossSent = true, len(h.crossing)
	}
}

// crossed: the client answered the PING sent after the early resets
// counted in crossSent: it has read them, and sends nothing more on
// those streams. Those reset since wait for a PING of their own.
func (h *h2conn) crossed() {
	h.crossing = slices.Delete(h.crossing, 0, h.crossSent)
	h.crossPing, h.crossSent = false, 0
	if len(h.crossing) == 0 {
		h.crossing = nil // an idle connection keeps no list
	} else {
		h.pingCrossing()
	}
}

// h2ShutdownPing is the PING data of Shutdown's round trip.
var h2ShutdownPing = [8]byte{'s', 'h', 'u', 't', 'd', 'o', 'w', 'n'}

// h2GoAwayWait bounds the wait between Shutdown's two GOAWAYs when the
// client does not answer the PING.
const h2GoAwayWait = time.Second

// shutdown begins Server.Shutdown on the connection, in two steps (RFC
// 9113 §6.8): GOAWAY(2^31-1, NO_ERROR) tells the client to open no more
// streams, while those it has already sent are still served; after one
// PING round trip (they have all arrived then) or h2GoAwayWait, whichever
// comes first, the final GOAWAY(last stream, NO_ERROR) follows (drain).
// A connection already ending closes once what it wrote is out.
func (h *h2conn) shutdown() {
	switch {
	case h.closed:
		return
	case h.dead: // lingering after the last GOAWAY (bounded), or failing: ending
		if len(h.streams) > 0 {
			h.closeFlushed() // stalled (idleClose): Shutdown does not wait for them
		}
		return
	case h.goaway || h.shutting:
		return
	}
	h.shutting = true
	_ = h.fr.WriteGoAway(1<<31-1, http2.ErrCodeNo, nil)
	_ = h.fr.WritePing(false, h2ShutdownPing)
	h.flush()
	h.shutTimer = aio.Delay(h.ls.l, h2GoAwayWait, func() (struct{}, error) {
		h.shutTimer = nil
		h.drain()
		return struct{}{}, nil
	})
	aio.Adopt(h.c.Scope(), h.shutTimer) // the connection's end cancels it
}

// idleClose ends a connection idle for IdleTimeout: GOAWAY(last stream,
// NO_ERROR) tells the client that no stream of its was lost (one it is
// opening just now was not processed, and may be retried elsewhere), then
// FIN, with a lingering close (end). A connection whose responses are
// stalled (the client's window stays shut) has streams that would hold a
// lingering close: it closes at the client's EOF, or when HeaderTimeout
// passes (timedOut), which cancels them.
func (h *h2conn) idleClose() {
	h.goaway = true
	_ = h.fr.WriteGoAway(h.lastID, http2.ErrCodeNo, nil)
	if len(h.streams) == 0 {
		h.end()
		return
	}
	h.flush()
	h.dead = true
	_ = h.c.CloseWrite()
	h.hc.setTimeout(&h.ls.headQ)
}

// drain sends the final GOAWAY(NO_ERROR): the streams open finish, new
// ones are refused, and the connection ends after the last one.
// Server.Shutdown's second step, and a client's GOAWAY(NO_ERROR).
func (h *h2conn) drain() {
	if h.goaway || h.dead || h.closed {
		return
	}
	h.goaway = true
	if t := h.shutTimer; t != nil {
		h.shutTimer = nil
		t.Cancel()
	}
	_ = h.fr.WriteGoAway(h.lastID, http2.ErrCodeNo, nil)
	h.flush()
	h.maybeEnd()
}

// maybeEnd ends a connection that sent GOAWAY once its last stream has
// closed.
func (h *h2conn) maybeEnd() {
	if !h.goaway || len(h.streams) > 0 || h.closed {
		return
	}
	h.end()
}

// end ends a connection after its final GOAWAY, with the root package's
// lingering close (aio.Conn.Drain), as HTTP/1.1's finish does: FIN once
// what it wrote is flushed, then what the client still sends (frames
// that crossed the GOAWAY: a WINDOW_UPDATE, a PING's answer, a new
// stream) is read and dropped until its EOF closes the connection, or
// Config.Listen.Conn.Linger after the FIN. Closing on those unread bytes would send a reset, which
// can destroy the responses the client has not read yet.
func (h *h2conn) end() {
	h.flush()
	h.dead = true
	h.stopStall()        // Drain waits for the handles in the connection's scope
	h.hc.setTimeout(nil) // the linger's bound is the connection's own
	h.c.Drain()
}

// flush hands the frames written since the last flush to the socket.
func (h *h2conn) flush() {
	if len(h.out.b) == 0 || h.closed {
		return
	}
	_, _ = h.c.Write(h.out.b)
	if cap(h.out.b) > h2OutKeep {
		h.out.b = nil // an idle connection keeps no large buffer
	} else {
		h.out.b = h.out.b[:0]
	}
}

// onDrain: the write queue has drained: held DATA goes on, and the
// Streams that said Full because of the queue alone (their own bytes all
// handed over, so none of them waits) hear OnDrain.
func (h *h2conn) onDrain(*aio.Conn) {
	h.sendWaiting()
	if h.queueFull {
		h.queueFull = false
		for _, st := range h.streams {
			if st.full && !st.waiting {
				h.drained(st) // one still Full (the queue filled again) says so again
			}
		}
	}
	h.flush()
}

// onEOF: the client has finished sending. With a stream still in
// progress (its request or its response not whole) it has gone away, and
// what it started is cancelled as the connection closes. With every
// stream answered whole (its END_STREAM sent, or reset) it merely closed
// after its last response, as a client does without keep-alive or after
// GOAWAY: the connection ends as after a GOAWAY of ours (end), whose
// lingering close waits for the handles not yet over (a FromHTTP handler
// reports its end from its goroutine, after its END_STREAM), as
// HTTP/1.1's does, rather than cancelling them as if the client were
// gone.
func (h *h2conn) onEOF(c *aio.Conn) {
	for _, st := range h.streams {
		if !st.remoteDone || !st.localDone && !st.reset {
			c.Close()
			return
		}
	}
	h.goaway = true // no stream can follow the EOF
	h.end()
}

// onClose: the connection is gone; so is every stream. A pending handle is
// cancelled by the connection's scope, and its end (adoptReply) releases its arena;
// the other requests are released here.
func (h *h2conn) onClose(c *aio.Conn, err error) {
	h.closed = true
	for _, st := range h.streams {
		st.reset = true
		if r := st.r; r != nil {
			r.gone = true
			h.ls.suppress(r)
			neverDispatched(st)
			h.maybeRelease(st)
		}
	}
	h.waiting = nil
	if h.ws.counted {
		err = nil // counted in Stats.WriteTimeouts already, whatever ended the flush of its GOAWAY
	}
	h.hc.onClose(c, err)
}

func (h *h2conn) conn() *aio.Conn { return h.c }

// cancelAllFor is h1conn.cancelAllFor for the connection's streams.
func (h *h2conn) cancelAllFor(err error) {
	for _, st := range h.streams {
		if r := st.r; r != nil {
			r.cancelFor(err)
		}
	}
}

func (h *h2conn) remoteAddr() netip.AddrPort { return h.c.RemoteAddr() }

func (h *h2conn) tlsState() (tls.ConnectionState, bool) { return h.c.TLS() }
