// Package goid gives the running goroutine an identity, for aio's loops to
// tell their own goroutine from others (Loop.OnLoop): the address of its
// runtime g where assembly can read it (amd64, arm64, 386), its goroutine id
// elsewhere.
package goid
