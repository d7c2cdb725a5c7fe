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
// cost the peer the replies before it). A connection paused (PauseRead)
// when the drain begins stays paused until its FIN is out, so that a
// peer that sends on without reading its replies is not read and dropped
// at line rate meanwhile; one that was reading reads and drops from the
// start (the rest of an upload whose reply went out early). A connection in its TLS
// handshake closes at once. Close still closes it at once. The handle is
// Closed's. Any goroutine.
//
// Linger counts from the FIN, and the FIN waits for the write queue to
// reach the kernel (and for the scope's handles to finish): a peer that
// does not read keeps the queue full, the FIN unsent, and the drain
// pending for ever. Two things bound it: ConnConfig.WriteTimeout (or
// SetWriteTimeout), which closes the connection with ErrWriteTimeout once
// the kernel has taken nothing and the peer acknowledged nothing for that
// long; or a deadline of the
// program's own, Within(c.Drain(), d), and Close when that fails with
// ErrTimeout (Within gives the handle up then, which closes the connection
// too unless something else waits on Closed; Close closes it regardless).
func (c *Conn) Drain() *Handle[struct{}] {
	_ = c.runInlineIfOpen(c.drain)
	return &c.closed
}
