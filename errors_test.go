package aio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every exported error says "aio:" once: an error that wraps a more
// general one is a kindError, whose text does not repeat the general
// one's ("aio: tcp read timeout", not "aio: tcp read timeout: aio: timeout").
func TestErrorTextsSayAioOnce(t *testing.T) {
	for _, err := range []error{
		ErrCancelled, ErrTimeout, ErrTooManySystems, ErrStopped, ErrAwaitOnLoop,
		ErrPending, ErrNoInputs, ErrNilFunc, ErrNilLoop, ErrNilHandle, ErrNotInBody,
		ErrGoexit, ErrSlabRelease, ErrConnClosed, ErrWriteClosed, ErrReadTimeout,
		ErrIdleTimeout, ErrFrameTooLarge, ErrListenerClosed, errConnStopped, errDrainDeadline, errPipeLoops, ErrGraceExpired,
	} {
		assert.Equal(t, 1, strings.Count(err.Error(), "aio:"), "%q", err)
	}
	assert.ErrorIs(t, ErrConnClosed, net.ErrClosed)
	assert.ErrorIs(t, ErrReadTimeout, ErrTimeout)
	assert.ErrorIs(t, errConnStopped, ErrStopped)
	assert.ErrorIs(t, errConnStopped, ErrCancelled)
	assert.ErrorIs(t, errDrainDeadline, ErrCancelled)
	for _, err := range []error{errConnStopped, errDrainDeadline} { // the program's side closed them
		assert.ErrorIs(t, err, ErrConnClosed)
		assert.ErrorIs(t, err, net.ErrClosed)
	}
	var ne net.Error
	assert.True(t, errors.As(ErrIdleTimeout, &ne) && ne.Timeout())
	assert.False(t, errors.As(ErrConnClosed, &ne) && ne.Timeout())
}

// An argument out of range is ErrInvalidArgument, however deep in the
// error that names the call, whose text says "aio:" once.
func TestInvalidArgumentsSayAioOnce(t *testing.T) {
	l := startLoop(t)
	_, lerr := Listen(l, "127.0.0.1:99999", ListenConfig{}, func(*Conn) {})
	_, herr := Listen(l, "example.com:80", ListenConfig{}, func(*Conn) {})
	_, merr := Listen(l, "127.0.0.1", ListenConfig{}, func(*Conn) {})
	_, aerr := AdoptConn(l, -1, ConnConfig{})
	_, nerr := AdoptConnFrom(l, nil, ConnConfig{})
	_, cerr := AdoptConn(l, 0, ConnConfig{KeepAlive: -1})
	var nilCtx context.Context
	_, derr := (&Dialer{}).DialContext(nilCtx, l, "127.0.0.1:1").Wait(context.Background())
	for _, err := range []error{lerr, herr, merr, aerr, nerr, cerr, derr, errPipeLoops} {
		assert.ErrorIs(t, err, ErrInvalidArgument, "%v", err)
		assert.Equal(t, 1, strings.Count(fmt.Sprint(err), "aio:"), "%q", err)
	}
}
