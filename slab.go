package aio

import (
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
)

// Slab is a fixed-capacity pool of slots with a lock-free Treiber free list.
//
// The free list head is one 64-bit word holding a generation tag in the high
// 32 bits and the index of the first free slot plus one in the low 32 bits (0:
// empty). Every successful push or pop bumps the generation, so a head that was
// popped and pushed back between another goroutine's load and its
// compare-and-swap no longer compares equal: the ABA problem of a plain
// pointer stack needs the generation to wrap, 2^32 pushes and pops by others
// while one goroutine stands between its load and its CAS (some two minutes
// of nothing but Acquire and Release on a fast machine, while that goroutine
// is not scheduled at all).
//
// Acquire, Release, InUse, Get and All are safe from any goroutine. The value
// in a slot is owned by whoever acquired it until they release it.
type Slab[T any] struct {
	slots []slabSlot[T]
	head  atomic.Uint64 // generation<<32 | (index+1); any goroutine, CAS
	inUse atomic.Int64  // slots acquired and not released; any goroutine
}

type slabSlot[T any] struct {
	next atomic.Uint32 // the next free slot while free, encoded by linkAfter
	used atomic.Bool   // between Acquire and Release
	val  T
}

// A free slot's next word names the slot below it on the free list: 0 the
// slot after it in the array (none after the last), 1 none, and k >= 2
// index k-2. The zero value chains the fresh array in index order, so
// NewSlab writes no slot and a slab's pages are touched only as its slots
// are first taken: an httpd loop's 1,024 request slots, over a megabyte,
// stay out of memory until the load needs them.
const (
	nextFollowing = 0 // the slot after this one in the array
	nextNone      = 1 // the bottom of the free list
)

// linkAfter encodes head's top (index+1, 0: empty) as a next word.
func linkAfter(top uint32) uint32 {
	if top == 0 {
		return nextNone
	}
	return top + 1
}

// topBelow decodes the next word of slot idx into a head top (index+1, 0:
// empty) among capacity slots.
func topBelow(next uint32, idx, capacity int) uint32 {
	switch next {
	case nextFollowing:
		if idx+1 < capacity {
			return uint32(idx + 2)
		}
		return 0
	case nextNone:
		return 0
	}
	return next - 1
}

// ErrSlabRelease is returned by Release for an index out of range or a slot
// that is not in use: a double release while the slot is free. A slot is
// named by its index alone, so a second release by its former owner after
// another has acquired it cannot be told from the new owner's, and frees
// the slot under them: one owner, one release, is the caller's to keep.
var ErrSlabRelease = errors.New("aio: slab release of a slot not in use")

// maxSlabCapacity is the most slots a slab holds: a slot's index plus one must
// fit the 32 low bits of the head word, and the constant must fit an int on
// 32-bit platforms.
const maxSlabCapacity = 1<<31 - 1

// NewSlab returns a slab of capacity slots, all free. capacity <= 0 means 1;
// a capacity above 2^31-1 means 2^31-1.
func NewSlab[T any](capacity int) *Slab[T] {
	if capacity <= 0 {
		capacity = 1
	}
	capacity = min(capacity, maxSlabCapacity)
	s := &Slab[T]{slots: make([]slabSlot[T], capacity)} // chained in order: nextFollowing
	s.head.Store(1)                                     // generation 0, slot 0
	return s
}

// Acquire takes a free slot and returns its index and value pointer; ok is
// false when every slot is in use. The value is whatever the previous owner
// left; the caller resets it.
func (s *Slab[T]) Acquire() (idx int, v *T, ok bool) {
	for {
		old := s.head.Load()
		top := uint32(old)
		if top == 0 {
			return -1, nil, false
		}
		slot := &s.slots[top-1]
		// next may be stale if another goroutine popped top meanwhile; then the
		// generation has moved and the CAS below fails.
		next := topBelow(slot.next.Load(), int(top-1), len(s.slots))
		if s.head.CompareAndSwap(old, (old>>32+1)<<32|uint64(next)) {
			// A slot on the free list is never marked used (Release clears the
			// mark before pushing), and the pop made it ours alone.
			slot.used.Store(true)
			s.inUse.Add(1)
			return int(top - 1), &slot.val, true
		}
	}
}

// Release returns slot idx to the free list. It returns ErrSlabRelease (and
// changes nothing) when idx is out of range or not in use.
func (s *Slab[T]) Release(idx int) error {
	if idx < 0 || idx >= len(s.slots) {
		return fmt.Errorf("%w: index %d out of range [0,%d)", ErrSlabRelease, idx, len(s.slots))
	}
	slot := &s.slots[idx]
	if !slot.used.CompareAndSwap(true, false) {
		return fmt.Errorf("%w: index %d", ErrSlabRelease, idx)
	}
	s.inUse.Add(-1)
	for {
		old := s.head.Load()
		slot.next.Store(linkAfter(uint32(old)))
		if s.head.CompareAndSwap(old, (old>>32+1)<<32|uint64(idx+1)) {
			return nil
		}
	}
}

// InUse returns the number of slots acquired and not yet released.
func (s *Slab[T]) InUse() int { return int(s.inUse.Load()) }

// Cap returns the number of slots.
func (s *Slab[T]) Cap() int { return len(s.slots) }

// Get returns the value of slot idx, or nil when idx is out of range or the
// slot is free.
func (s *Slab[T]) Get(idx int) *T {
	if idx < 0 || idx >= len(s.slots) || !s.slots[idx].used.Load() {
		return nil
	}
	return &s.slots[idx].val
}

// Free walks the free slots, in index order, for their owner to empty
// (a free slot keeps what its last owner left): a slot acquired or
// released during the walk may or may not be seen, and a free slot's value
// belongs to nobody, so write it only where no Acquire can run meanwhile
// (the one goroutine that acquires). A slot never taken is its zero value:
// leave it so, and its page is not touched.
func (s *Slab[T]) Free() iter.Seq2[int, *T] {
	return func(yield func(int, *T) bool) {
		for i := range s.slots {
			if !s.slots[i].used.Load() && !yield(i, &s.slots[i].val) {
				return
			}
		}
	}
}

// All walks the slots in use, in index order. A slot acquired or released
// during the walk may or may not be seen.
func (s *Slab[T]) All() iter.Seq2[int, *T] {
	return func(yield func(int, *T) bool) {
		for i := range s.slots {
			if s.slots[i].used.Load() && !yield(i, &s.slots[i].val) {
				return
			}
		}
	}
}
