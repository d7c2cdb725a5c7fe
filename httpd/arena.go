package httpd

// Arena is a request's memory: a fixed-size block (Config.ArenaSize) taken
// from its loop's slab when the request's head has arrived, and given back
// when the request has ended (its response written and its handler's
// handle, if any, finished). The request's head is copied into it, a body
// that fits follows, and the rest is the handler's to build its response
// in. Bytes from the arena are valid until the request ends: a response
// built there is written before the arena goes back.
//
// An Arena belongs to its request's loop: use it on the loop, or from a
// Work job's fn when that job's handle is the handler's reply
// (Later(aio.Work(...))): the arena goes back only once that fn has
// returned, even when its client has gone and the handle has ended
// cancelled. A job inside another handle (a Then of a Work, say) ends
// with it when cancelled, while its fn runs on: give such a fn copies.
type Arena struct {
	buf []byte // the whole block
	off int    // buf[off:] is free
}

// Alloc returns n bytes (zeroed, len and cap n) from the arena, or from
// the heap when the arena has less room than that. n < 0 is taken as 0.
func (a *Arena) Alloc(n int) []byte {
	if n <= 0 {
		return nil
	}
	if n > len(a.buf)-a.off {
		return make([]byte, n)
	}
	b := a.buf[a.off : a.off+n : a.off+n]
	a.off += n
	clear(b)
	return b
}

// Buffer returns the arena's room as an empty slice to append to: appends
// that fit use the arena, one that does not moves to the heap as append
// does. The room is the slice's: later Allocs come from the heap. Build a
// response body with it:
//
//	b := r.Arena().Buffer()
//	b = append(b, `{"id":"`...)
func (a *Arena) Buffer() []byte {
	b := a.buf[a.off:a.off:len(a.buf)]
	a.off = len(a.buf)
	return b
}

// Room returns the bytes the arena has left.
func (a *Arena) Room() int { return len(a.buf) - a.off }

// Size returns the arena's size (Config.ArenaSize).
func (a *Arena) Size() int { return len(a.buf) }

// reset makes the whole block free again.
func (a *Arena) reset(buf []byte) {
	a.buf, a.off = buf, 0
}

// take reserves n bytes of the arena for the server (the head, a buffered
// body); the caller checked the room.
func (a *Arena) take(n int) []byte {
	b := a.buf[a.off : a.off+n : a.off+n]
	a.off += n
	return b
}

// shrink gives back the unused end of b, the arena's last take, and
// returns b clipped to its length: what it gave back is the arena's again
// (a trailer, the handler's Alloc), and an append to b must not reach it.
func (a *Arena) shrink(b []byte) []byte {
	a.off -= cap(b) - len(b)
	return b[:len(b):len(b)]
}
