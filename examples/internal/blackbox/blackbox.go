// Package blackbox runs an example program as its users do, for the
// examples' tests: it builds the program, starts it with flags, waits for
// the one line "listening on ADDR" it prints on standard output, signals
// it and checks how it exits.
package blackbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Timeout bounds every wait of the tests: a hang fails the test instead
// of the whole run.
const Timeout = 20 * time.Second

// buildFlags are go build's flags for the program: the test's own race
// detector and build tags (race.go, aiodebug.go), so that the program runs
// with the checks its test runs with.
var buildFlags []string

// Build builds the main package of the test's directory and returns the
// binary's path, in a directory removed when the test ends.
func Build(t testing.TB) string {
	t.Helper()
	bin := t.TempDir() + "/prog"
	build := exec.Command("go", append(append([]string{"build", "-o", bin}, buildFlags...), ".")...)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// Proc is a running program.
type Proc struct {
	Addr string // from its "listening on ADDR" line

	cmd    *exec.Cmd
	stdout *output       // all it printed there
	stderr *output       // all it printed on its standard error
	exited chan struct{} // closed once it has exited
	err    error         // Wait's, once exited
}

// Start starts bin with args and returns once it has printed the address
// it listens on. The program is killed when the test ends if it is still
// running, and its standard error is logged if the test failed.
func Start(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{cmd: exec.Command(bin, args...), stdout: newOutput(), exited: make(chan struct{})}
	stderr := newOutput()
	p.stderr = stderr
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, stderr
	// A race build waits a second at exit by default; a race it reports
	// makes the status nonzero, which fails the test.
	p.cmd.Env = append(os.Environ(), "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s %v: %v; stderr:\n%s", bin, args, p.err, stderr)
		}
	})
	select {
	case <-p.stdout.first:
	case <-p.exited:
		t.Fatalf("%s exited before listening: %v", bin, p.err)
	case <-time.After(Timeout):
		t.Fatalf("%s did not say where it listens", bin)
	}
	line, _, _ := strings.Cut(p.stdout.String(), "\n")
	addr, ok := strings.CutPrefix(line, "listening on ")
	require.True(t, ok, "first line %q", line)
	p.Addr = addr
	return p
}

// Stderr returns what the program printed on its standard error so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

// Send sends sig and returns at once: Wait then tells how it ended.
func (p *Proc) Send(t testing.TB, sig os.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// Signal sends sig and waits for the exit (see Wait).
func (p *Proc) Signal(t testing.TB, sig os.Signal) (code int, took time.Duration) {
	t.Helper()
	begin := time.Now()
	p.Send(t, sig)
	return p.Wait(t, begin)
}

// Wait waits for the program to exit and returns its status and the time
// since begin. It fails the test if the program printed anything on
// standard output after its first line.
func (p *Proc) Wait(t testing.TB, begin time.Time) (code int, took time.Duration) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(Timeout):
		t.Fatal("the program did not exit")
	}
	took = time.Since(begin)
	require.Equal(t, "listening on "+p.Addr+"\n", p.stdout.String(), "standard output")
	return p.cmd.ProcessState.ExitCode(), took
}

// output collects what a process writes, signalling its first line.
type output struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	once  sync.Once
	first chan struct{} // closed at the first newline
}

func newOutput() *output { return &output{first: make(chan struct{})} }

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(b)
	if bytes.IndexByte(o.buf.Bytes(), '\n') >= 0 {
		o.once.Do(func() { close(o.first) })
	}
	return len(b), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// Refused runs bin with args under a limit of nofile open files (0: the
// limit the test has), for a program that must refuse to start, and
// returns its exit status and standard error once it has exited. It
// fails the test if the program started (printed anything on standard
// output) or did not exit, or if the Go runtime crashed in it (a "fatal
// error" or a panic) instead of the program saying what was wrong.
func Refused(t testing.TB, bin string, nofile int, args ...string) (code int, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if nofile > 0 { // the hard limit too: the Go runtime raises the soft one to it
		cmd = exec.CommandContext(ctx, "sh", append([]string{"-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(nofile), bin}, args...)...)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%v: did not exit; stderr: %s", args, errOut.String())
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%v: exited 0; stderr: %s", args, errOut.String())
	require.Empty(t, out.String(), "%v: started", args)
	stderr = errOut.String()
	if strings.Contains(stderr, "fatal error:") || strings.Contains(stderr, "goroutine ") {
		head := strings.SplitN(stderr, "\n", 4)
		require.Fail(t, "the program crashed", "%v: %s", args, strings.Join(head[:min(3, len(head))], "\n"))
	}
	return exit.ExitCode(), stderr
}
