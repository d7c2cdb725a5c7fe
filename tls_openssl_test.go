package aio

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTLSOpenSSLKeyUpdate talks to the loop server with openssl s_client
// (when installed): ALPN is shown, and a KeyUpdate it asks for ("K", with
// update_requested) is answered, the echo flowing under the new keys both
// ways.
func TestTLSOpenSSLKeyUpdate(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl here")
	}
	l := startLoop(t)
	scfg, _ := tlsConfigs(t)
	scfg.NextProtos = []string{"h2", "http/1.1"}
	ln := tlsEchoListen(t, l, ListenConfig{TLS: scfg})
	cmd := exec.CommandContext(testCtx(t), "openssl", "s_client", "-connect", ln.Addr().String(),
		"-servername", "localhost", "-alpn", "h2", "-tls1_3")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, w, err := os.Pipe() // stdout and stderr, where KEYUPDATE is told
	require.NoError(t, err)
	defer stdout.Close()
	cmd.Stdout, cmd.Stderr = w, w
	require.NoError(t, cmd.Start())
	w.Close()
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	until := func(want string) {
		t.Helper()
		for {
			line, ok := <-lines
			require.True(t, ok, "s_client ended before %q", want)
			if strings.Contains(line, want) {
				return
			}
		}
	}
	until("ALPN protocol: h2")
	_, err = io.WriteString(stdin, "hello\n")
	require.NoError(t, err)
	until("hello")
	// s_client takes a read of its stdin that starts with K as the
	// command, and drops the rest: one write each.
	_, err = io.WriteString(stdin, "K\n")
	require.NoError(t, err)
	until("KEYUPDATE")
	_, err = io.WriteString(stdin, "after the key update\n")
	require.NoError(t, err)
	until("after the key update")
	require.NoError(t, stdin.Close()) // s_client ends
	for range lines {
	}
	_ = cmd.Wait()
	require.Equal(t, uint64(1), l.Stats().TLSHandshakes)
}
