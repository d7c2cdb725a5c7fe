//go:build !aiodebug

package httpd

// checkLoop asserts that the caller runs on r's loop. It compiles to
// nothing unless the aiodebug build tag is set (see debug_on.go).
func (r *Request) checkLoop() {}
