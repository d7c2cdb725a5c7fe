//go:build amd64 || arm64 || 386

package goid

// Get returns the address of the running goroutine's runtime g structure. It is
// the cheapest identity a goroutine has (two instructions, no syscall), which is
// what OnLoop needs: it sits on every hot path that decides between running on the
// loop directly and posting to it. A g is recycled only after its goroutine exits,
// and the loop compares it only against goroutines that are alive (the loop
// goroutine itself, or a Do body it is running), so a recycled g cannot match.
//
// Implemented in goid_amd64.s, goid_arm64.s and goid_386.s.
func Get() uintptr
