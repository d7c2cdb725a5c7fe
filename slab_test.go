package aio

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlabAcquireReleaseBasics(t *testing.T) {
	s := NewSlab[int](3)
	require.Equal(t, 3, s.Cap())
	seen := map[int]bool{}
	for i := 0; i < 3; i++ {
		idx, v, ok := s.Acquire()
		require.True(t, ok)
		require.False(t, seen[idx])
		seen[idx] = true
		*v = idx * 10
	}
	_, _, ok := s.Acquire()
	require.False(t, ok, "a full slab refuses")
	require.Equal(t, 3, s.InUse())
	n := 0
	for idx, v := range s.All() {
		require.Equal(t, idx*10, *v)
		n++
	}
	require.Equal(t, 3, n)
	require.NoError(t, s.Release(1))
	require.ErrorIs(t, s.Release(1), ErrSlabRelease, "double release")
	require.ErrorIs(t, s.Release(-1), ErrSlabRelease)
	require.ErrorIs(t, s.Release(3), ErrSlabRelease)
	require.Nil(t, s.Get(1))
	require.NotNil(t, s.Get(0))
	require.Nil(t, s.Get(99))
	idx, _, ok := s.Acquire()
	require.True(t, ok)
	require.Equal(t, 1, idx, "the released slot is reused")
	require.NotNil(t, NewSlab[int](0), "capacity 0 means 1")
}

// A fresh slab hands its slots out in index order (the free list the zero
// value chains), and released slots come back last in, first out, ahead of
// the fresh ones not yet taken.
func TestSlabFreeListOrder(t *testing.T) {
	s := NewSlab[[64]byte](5)
	take := func() int {
		t.Helper()
		idx, _, ok := s.Acquire()
		require.True(t, ok)
		return idx
	}
	require.Equal(t, 0, take())
	require.Equal(t, 1, take())
	require.NoError(t, s.Release(0))
	require.NoError(t, s.Release(1))
	require.Equal(t, 1, take(), "the last released first")
	require.Equal(t, 0, take())
	require.Equal(t, 2, take(), "then the fresh ones, in order")
	require.Equal(t, 3, take())
	require.Equal(t, 4, take())
	_, _, ok := s.Acquire()
	require.False(t, ok, "no slot after the last fresh one")
	require.NoError(t, s.Release(4))
	require.NoError(t, s.Release(2))
	require.Equal(t, 2, take())
	require.Equal(t, 4, take())
	_, _, ok = s.Acquire()
	require.False(t, ok)
	require.Equal(t, 5, s.InUse())

	one := NewSlab[int](1)
	idx, _, ok := one.Acquire()
	require.True(t, ok)
	require.Zero(t, idx)
	_, _, ok = one.Acquire()
	require.False(t, ok)
	require.NoError(t, one.Release(0))
	idx, _, ok = one.Acquire()
	require.True(t, ok)
	require.Zero(t, idx)
}

// Many goroutines acquiring and releasing for a while: no slot is ever held
// by two owners at once and the in-use count stays exact.
func TestSlabConcurrentInvariants(t *testing.T) {
	const capacity, workers = 8, 16
	s := NewSlab[int](capacity)
	owners := make([]atomic.Int32, capacity)
	var held atomic.Int64
	var violations atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				idx, v, ok := s.Acquire()
				if !ok {
					continue
				}
				if owners[idx].Add(1) != 1 {
					violations.Add(1)
				}
				if n := held.Add(1); n > capacity {
					violations.Add(1)
				}
				*v = w // the owner writes freely: the race detector checks exclusivity
				held.Add(-1)
				owners[idx].Add(-1)
				if err := s.Release(idx); err != nil {
					violations.Add(1)
				}
			}
		}()
	}
	time.Sleep(2 * time.Second) // a soak of fixed length, not synchronisation
	close(stop)
	wg.Wait()
	require.Zero(t, violations.Load())
	require.Equal(t, 0, s.InUse())
	free := 0
	for {
		if _, _, ok := s.Acquire(); !ok {
			break
		}
		free++
	}
	require.Equal(t, capacity, free, "every slot is back on the free list exactly once")
}

// Free walks the free slots only, in index order, with what their last
// owners left: a slot never taken is its zero value.
func TestSlabFree(t *testing.T) {
	s := NewSlab[int](4)
	for range 3 {
		_, v, ok := s.Acquire()
		require.True(t, ok)
		*v = 7
	}
	require.NoError(t, s.Release(1))
	var idx, vals []int
	for i, v := range s.Free() {
		idx, vals = append(idx, i), append(vals, *v)
	}
	assert.Equal(t, []int{1, 3}, idx)
	assert.Equal(t, []int{7, 0}, vals, "the released slot keeps its value; the one never taken is zero")
}
