// Package httpd is an HTTP/1.1 server on aio loops: the seeds' webserver,
// where a handler answers at once or returns a handle, and a client that
// goes away cancels everything its request started and gives back every
// byte it held.
package httpd
