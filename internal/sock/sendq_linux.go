package sock

import "golang.org/x/sys/unix"

// SendQueueSupported says SendQueue works here.
const SendQueueSupported = true

// SendQueue returns how many bytes a TCP socket's kernel send queue holds:
// those not sent yet and those sent but not acknowledged by the peer
// (ioctl SIOCOUTQ). A queue that shrinks while no new byte enters it is a
// peer that reads. Through the scheduler (x/sys).
func SendQueue(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.SIOCOUTQ) }
