package aio

// Drain ends the connection gracefully, as Listener.Drain ends each of
// the connections it accepted, for a program that decides itself when a
// connection is done (a server after its last response): once the
// connection's scope holds no running handle, the write queue flushes,
// FIN goes out, and what the peer still sends is read and dropped (the
// read callback, OnEOF and a framer are set aside) until the peer's EOF
// closes the connection, or ConnConfig.Linger (2 s by default) after the
// FIN if the peer does not close (a negative Linger closes it right after).
// That is nginx's lingering close: closing with unread bytes would reset
// the connection, and the reset can make the peer's kernel drop replies
// the peer has not read yet (a request that crossed our FIN must not
// cost the peer the replies before it). A connection in its TLS
// handshake closes at once. Close still closes it at once. The handle is
// Closed's. Any goroutine.
func (c *Conn) Drain() *Handle[struct{}] {
	_ = c.runInlineIfOpen(c.drain)
	return &c.closed
}
