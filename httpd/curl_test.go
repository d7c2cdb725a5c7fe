package httpd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// curlRunner returns a function that runs curl with the options given
// first and then its own, and returns its output; curl failing, or
// missing (make tools installs it), fails the test.
func curlRunner(t *testing.T, opts ...string) func(args ...string) string {
	t.Helper()
	path, err := exec.LookPath("curl")
	require.NoError(t, err, "curl is missing: make tools installs it")
	return func(args ...string) string {
		t.Helper()
		all := append(append([]string{"-sS", "--max-time", "10"}, opts...), args...)
		out, err := exec.CommandContext(t.Context(), path, all...).CombinedOutput()
		require.NoError(t, err, "curl %v: %s", all, out)
		return string(out)
	}
}

// curlBody returns a body for curl to send and the file that holds it.
func curlBody(t *testing.T) (body, file string) {
	t.Helper()
	body = strings.Repeat("0123456789", 30000)
	file = filepath.Join(t.TempDir(), "body")
	require.NoError(t, os.WriteFile(file, []byte(body), 0o600))
	return body, file
}

// curl is a second real client: make test installs it (the Makefile's
// tools target); its absence fails the test.
func TestCurl(t *testing.T) {
	run := curlRunner(t)
	ts := startServer(t, testMux(), Config{})
	// two requests on one connection (curl reuses it), then a POST
	out := run("-w", " %{http_code} %{num_connects}\n", ts.url+"/health", ts.url+"/users/5")
	assert.Equal(t, "ok 200 1\n"+`{"id":"5"} 200 0`+"\n", out)
	body, file := curlBody(t)
	assert.True(t, body == run("--data-binary", "@"+file, ts.url+"/echo"), "CL echo differs")
	assert.True(t, body == run("-H", "Transfer-Encoding: chunked", "--data-binary", "@"+file, ts.url+"/echo"), "chunked echo differs")
	assert.Equal(t, "hello", run("-H", "Expect: 100-continue", "--data-binary", "hello", ts.url+"/echo"))
	head := run("-I", ts.url+"/health")
	assert.Contains(t, head, "HTTP/1.1 200 OK")
	assert.Contains(t, head, "Content-Length: 2")
	assert.Equal(t, "waited 3 ms", run("--http1.0", ts.url+"/slow?ms=3"))
	ts.atRest(t)
}
