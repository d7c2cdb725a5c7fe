package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// child is a helper process of a workload: the loopbench binary itself,
// started with an environment variable that makes its init run something
// else (idleClient, proxyPeer), talking in lines over its stdin and stdout.
// Work done there is not charged to this process's memory or CPU figures.
// Owned by the goroutine that started it.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // the child's stdout, line by line; closed at its end
}

// startChild starts the binary with env=value added to its environment.
// Its stderr is this process's.
func startChild(env, value string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env+"="+value)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(ch.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			ch.lines <- sc.Text()
		}
	}()
	return ch, nil
}

// send writes one line to the child.
func (ch *child) send(format string, args ...any) error {
	_, err := fmt.Fprintf(ch.stdin, format+"\n", args...)
	return err
}

// expect waits up to limit for the child's next line, which must start
// with word, and returns the fields after it. A line "error ..." is the
// child's failure.
func (ch *child) expect(word string, limit time.Duration) ([]string, error) {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case line, ok := <-ch.lines:
		f := strings.Fields(line)
		switch {
		case !ok:
			return nil, fmt.Errorf("child exited before saying %q", word)
		case len(f) > 0 && f[0] == word:
			return f[1:], nil
		case len(f) > 0 && f[0] == "error":
			return nil, errors.New("child: " + strings.TrimPrefix(line, "error "))
		}
		return nil, fmt.Errorf("child said %q, not %q", line, word)
	case <-t.C:
		return nil, fmt.Errorf("child did not say %q within %v", word, limit)
	}
}

// close closes the child's stdin, which tells it to finish, and waits for
// it to exit, killing it if it has not after 10 s. It returns the child's
// failure.
func (ch *child) close() error {
	ch.stdin.Close()
	t := time.AfterFunc(10*time.Second, func() { _ = ch.cmd.Process.Kill() })
	defer t.Stop()
	for range ch.lines { // its last words, then the end of its stdout
	}
	return ch.cmd.Wait()
}
