//go:build !race

package aio

// raceEnabled reports whether the tests run under the race detector: see
// detector_race_test.go.
const raceEnabled = false
