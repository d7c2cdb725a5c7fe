//go:build !race

package sock

// RaceEnabled reports whether the race detector is on: here it is off, and
// the annotation loops compile away. The root package's tests size their
// deep graphs by it too (deepN).
const RaceEnabled = false

// raceWritten and raceRead annotate raw system calls for the race detector;
// without it they do nothing (see race_on.go).
func raceWritten([]byte) {}

func raceRead([]byte) {}
