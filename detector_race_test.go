//go:build race

package aio

// raceEnabled reports whether the tests run under the race detector (this
// file's build tag): deepN sizes the deep-graph tests by it.
const raceEnabled = true
