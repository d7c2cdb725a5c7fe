//go:build aiodebug

package aio

import "fmt"

// checkOnLoop panics when a loop-only path runs off its loop, as x/net/http2's
// serveG.check does: the threading rule broken is a bug in aio itself, and
// this build (go test -tags aiodebug) finds it where it happens instead of as a
// data race later.
func (l *Loop) checkOnLoop() {
	if !l.OnLoop() {
		panic(fmt.Sprintf("aio: loop %q: loop-only code running off the loop", l.name))
	}
}
