package httpd

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd/internal/h1"
)

// loopState is a server's part on one loop: its listener, its arenas, its
// connections, the timeouts and the cached Date. Owned by the loop, but
// for the counters (atomic, read by Server.Stats) and the fields said to be
// immutable.
type loopState struct {
	srv  *Server             // immutable
	cfg  *Config             // the server's, defaults applied; immutable
	l    *aio.Loop           // immutable
	slab *aio.Slab[*Request] // the arenas (and the Requests around them), each made on its first take; immutable

	ln     *aio.Listener
	ticker *aio.Handle[struct{}] // the timeout sweep
	closed *aio.Scope            // a closed scope: a late Request.Scope's (closedScope)
	seq    uint64                // requests started on this loop

	head   h1.Head    // the head Parse fills, copied into the request's arena at once
	wbuf   []byte     // a response head (and small body) is built here, then written
	fields []h1.Field // the response's fields, as h1 takes them
	// A chunked body's trailer, from split to the body's end (trailer.go).
	tbuf    []byte
	tfields []h1.Field

	h2free []*h2stream // closed HTTP/2 streams, for new ones (h2stream.go)
	pends  sync.Pool   // stream buffers over pendKeep, of requests that ended (stream.go): *[]byte
	// h2Streams is the HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: h2MaxStreams,
	// or Config.Arenas if fewer (more streams than arenas would only be
	// refused). Immutable.
	h2Streams int

	conns   connList // every open connection
	waiters connList // connections that hold no arena waiting for one, oldest first
	// waitersMore are the connections that hold arenas and wait for
	// another, oldest first: served after waiters, and only while an
	// arena is free beyond the reserve (spare).
	waitersMore connList
	// reserve is how many arenas a connection that holds some cannot
	// take: Config.Arenas/8, kept for connections that hold none, so that
	// one client pipelining requests or opening streams that its handlers
	// hold cannot leave the others waiting. Immutable.
	reserve int
	maxBody int64    // MaxBodyBytes, MaxInt64 for none: a request's body limit until a MaxBytesHandler lowers it; immutable
	headQ   connList // connections whose request head has begun, by deadline
	idleQ   connList // idle keep-alive (and lingering) connections, by deadline

	date     []byte        // the Date value
	dateNext time.Duration // loop time when date goes stale

	draining bool // Shutdown began: no new requests on kept-alive connections
	drained  bool // the server counted this loop as drained

	st loopStats
}

// loopStats are a loop's counters. Written on the loop, read anywhere.
type loopStats struct {
	connsOpen, streamsOpen, handlersPending atomic.Int64
	requests, cancelled, suppressed         atomic.Uint64
	refused, releases, panics, badRequests  atomic.Uint64
	failed                                  atomic.Uint64
	writeTimeouts, abusive, windowStalls    atomic.Uint64
}

func newLoopState(srv *Server, cfg *Config, l *aio.Loop) *loopState {
	ls := &loopState{srv: srv, cfg: cfg, l: l, slab: aio.NewSlab[*Request](cfg.Arenas)}
	ls.conns.i, ls.waiters.i, ls.waitersMore.i, ls.headQ.i, ls.idleQ.i = linkAll, linkWait, linkWait, linkTime, linkTime
	ls.reserve = cfg.Arenas / 8
	ls.maxBody = cfg.MaxBodyBytes
	if ls.maxBody <= 0 {
		ls.maxBody = math.MaxInt64 // no limit
	}
	ls.headQ.d, ls.idleQ.d = cfg.HeaderTimeout, cfg.IdleTimeout
	ls.h2Streams = min(h2MaxStreams, cfg.Arenas)
	_ = l.Post(func() { ls.closedScope() }) // made and closed before the first request
	return ls
}

// dateValue returns the Date value for a response now: made at most once
// a second, when the loop's clock passes the next second of the wall clock.
func (ls *loopState) dateValue() []byte {
	if now := ls.l.Now(); now >= ls.dateNext || ls.date == nil {
		t := time.Now()
		ls.date = h1.AppendDate(ls.date[:0], t)
		ls.dateNext = now + time.Second - time.Duration(t.Nanosecond())
	}
	return ls.date
}

// acquire takes an arena for a request, or returns nil when none is free.
func (ls *loopState) acquire() *Request {
	idx, slot, ok := ls.slab.Acquire()
	if !ok {
		return nil
	}
	if *slot == nil {
		// Made on the first take, not with the slab: a Request is over a
		// kilobyte before its arena, and a loop that never sees its peak
		// load never pays for it (nor does the collector scan it).
		r := &Request{buf: make([]byte, ls.cfg.ArenaSize), ls: ls, idx: idx}
		r.body.r = r
		r.stream.r = r
		*slot = r
	}
	return *slot
}

// release gives r's arena back and hands it, or another, to the
// connection that has waited longest for one.
func (ls *loopState) release(r *Request) {
	ls.st.releases.Add(1)
	r.stream.pend = ls.keepPend(r.stream.pend)
	r.forget()
	if ls.drained {
		*ls.slab.Get(r.idx) = nil // no request comes again (dropArenas)
	}
	if err := ls.slab.Release(r.idx); err != nil {
		panic("httpd: " + err.Error()) // one owner, one release: a second one is a bug
	}
	for {
		q := &ls.waiters
		if q.head == nil {
			if q = &ls.waitersMore; q.head == nil || !ls.spare() {
				return
			}
		}
		r := ls.acquire()
		if r == nil {
			return
		}
		hc := q.head
		q.remove(hc)
		hc.reserved = r
		hc.unstall(stallArena)
	}
}

// dropArenas lets go of the loop's free arenas and the Requests around
// them, and of the other memory kept for requests to come: once the loop
// has drained, none comes, but a program keeps its *Server (for Stats,
// say) as long as it runs, and the arenas are up to Arenas*ArenaSize of
// it. An arena still in use goes when its request ends (release). On the
// loop, which alone acquires.
func (ls *loopState) dropArenas() {
	for _, slot := range ls.slab.Free() {
		if *slot != nil { // never taken: left untouched
			*slot = nil
		}
	}
	clear(ls.h2free)
	ls.h2free = nil
	ls.wbuf, ls.tbuf = nil, nil
}

// spare reports whether an arena is free beyond the reserve: one that a
// connection holding arenas already may take.
func (ls *loopState) spare() bool { return ls.slab.Cap()-ls.slab.InUse() > ls.reserve }

// sweep closes the connections whose head or idle deadline has passed.
// On the loop, from the ticker.
func (ls *loopState) sweep() {
	now := ls.l.Now()
	for _, q := range [...]*connList{&ls.headQ, &ls.idleQ} {
		for hc := q.head; hc != nil && hc.deadline <= now; hc = q.head {
			q.remove(hc)
			hc.timedOut()
		}
	}
}

// Links of a connection in the lists of its loop.
const (
	linkAll  = iota // loopState.conns
	linkWait        // loopState.waiters or waitersMore
	linkTime        // headQ or idleQ
	linkCount
)

type link struct {
	prev, next *h1conn
	in         *connList
}

// connList is an intrusive doubly linked list of connections through
// their links[i]. A timeout list (d > 0) is sorted by deadline because
// every member's deadline is its insertion time plus d.
type connList struct {
	head, tail *h1conn
	i          int
	d          time.Duration
}

func (q *connList) push(hc *h1conn) {
	lk := &hc.links[q.i]
	if lk.in != nil {
		lk.in.remove(hc)
	}
	lk.in, lk.prev, lk.next = q, q.tail, nil
	if q.tail != nil {
		q.tail.links[q.i].next = hc
	} else {
		q.head = hc
	}
	q.tail = hc
}

func (q *connList) remove(hc *h1conn) {
	lk := &hc.links[q.i]
	if lk.in != q {
		return
	}
	if lk.prev != nil {
		lk.prev.links[q.i].next = lk.next
	} else {
		q.head = lk.next
	}
	if lk.next != nil {
		lk.next.links[q.i].prev = lk.prev
	} else {
		q.tail = lk.prev
	}
	*lk = link{}
}

// closedScope returns a scope of the loop that is closed: the Scope of a
// request that has ended, into which a late Adopt cancels its handle at
// once. It is made when the server starts on the loop (newLoopState posts
// this), so it has closed before any request ends, and it is there while
// the loop stops. On the loop.
func (ls *loopState) closedScope() *aio.Scope {
	if ls.closed == nil {
		aio.WithScope(ls.l, func(s *aio.Scope) *aio.Handle[struct{}] {
			ls.closed = s
			return aio.Pure(ls.l, struct{}{})
		})
	}
	return ls.closed
}
