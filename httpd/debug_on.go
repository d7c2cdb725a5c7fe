//go:build aiodebug

package httpd

// checkLoop panics when a Request, its Body or its Stream is used off the
// request's loop, as aio's own loop-only paths do under this build tag
// (go test -tags aiodebug): the misuse is found where it happens, not as
// a data race or a corrupt response later.
func (r *Request) checkLoop() {
	if !r.ls.l.OnLoop() {
		panic("httpd: a Request, its Body or its Stream used off the request's loop")
	}
}
