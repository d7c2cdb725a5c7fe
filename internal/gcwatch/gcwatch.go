// Package gcwatch tells the tests of several packages when a value has
// been garbage collected: what a handle, a connection or a request must
// let go of once it has ended.
package gcwatch

import (
	"runtime"
	"time"
)

// Within collects garbage until freed closes or d has passed, and
// reports whether it closed: a collection is seen only by asking.
func Within(freed <-chan struct{}, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		runtime.GC()
		select {
		case <-freed:
			return true
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
