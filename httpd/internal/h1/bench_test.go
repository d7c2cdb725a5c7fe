package h1

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// browserGET is the head of a GET a browser sends (Chrome's, trimmed of
// its cookies).
const browserGET = "GET /static/js/app.4f2c1e.js?v=3 HTTP/1.1\r\n" +
	"Host: www.example.com\r\n" +
	"Connection: keep-alive\r\n" +
	"sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \"Not-A.Brand\";v=\"99\"\r\n" +
	"sec-ch-ua-mobile: ?0\r\n" +
	"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36\r\n" +
	"sec-ch-ua-platform: \"Linux\"\r\n" +
	"Accept: */*\r\n" +
	"Sec-Fetch-Site: same-origin\r\n" +
	"Sec-Fetch-Mode: no-cors\r\n" +
	"Sec-Fetch-Dest: script\r\n" +
	"Referer: https://www.example.com/\r\n" +
	"Accept-Encoding: gzip, deflate, br, zstd\r\n" +
	"Accept-Language: en-GB,en-US;q=0.9,en;q=0.8\r\n" +
	"If-None-Match: W/\"5e15-18f2a3c7d40\"\r\n" +
	"If-Modified-Since: Tue, 07 May 2024 09:12:44 GMT\r\n" +
	"\r\n"

const healthGET = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"

// benchParse parses head, fed step bytes at a time (all at once for 0).
func benchParse(b *testing.B, head string, step int) {
	buf := []byte(head)
	if step == 0 {
		step = len(buf)
	}
	var p Parser
	var h Head
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if n, err := parseFed(&p, buf, &h, step); n != len(buf) || err != nil {
			b.Fatal(n, err)
		}
	}
}

func BenchmarkParseBrowserGET(b *testing.B) { benchParse(b, browserGET, 0) }
func BenchmarkParseHealth(b *testing.B)     { benchParse(b, healthGET, 0) }

// BenchmarkParseBrowserGETBytewise: the worst way a head can arrive, a
// byte per read; what was searched is not searched again.
func BenchmarkParseBrowserGETBytewise(b *testing.B) { benchParse(b, browserGET, 1) }

// chunkedBody is a 64 KiB body in 16 chunks of 4 KiB, as a client
// streaming an upload sends it.
var chunkedBody = []byte(strings.Repeat("1000\r\n"+strings.Repeat("x", 4096)+"\r\n", 16) + "0\r\n\r\n")

func benchChunked(b *testing.B, body []byte) {
	var d ChunkedDecoder
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		d.Reset()
		in := body
		for !d.Done() {
			_, n, err := d.Decode(in)
			if err != nil || n == 0 {
				b.Fatal(n, err)
			}
			in = in[n:]
		}
	}
}

func BenchmarkChunkedDecode(b *testing.B) { benchChunked(b, chunkedBody) }

// BenchmarkChunkedDecodeSmall: a body of 1-byte chunks, all framing.
func BenchmarkChunkedDecodeSmall(b *testing.B) {
	benchChunked(b, []byte(strings.Repeat("1\r\nx\r\n", 256)+"0\r\n\r\n"))
}

func BenchmarkAppendResponse(b *testing.B) {
	date := AppendDate(nil, time.Now())
	r := Response{Status: 200, Body: BodyLength, ContentLength: 1234, Date: date,
		Fields: []Field{{Name: []byte("Content-Type"), Value: []byte("text/plain; charset=utf-8")}}}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendResponse(buf[:0], &r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNetHTTPReadRequest: net/http's reading of the same heads, for
// comparison.
func BenchmarkNetHTTPReadRequest(b *testing.B) {
	for _, c := range []struct{ name, head string }{{"BrowserGET", browserGET}, {"Health", healthGET}} {
		b.Run(c.name, func(b *testing.B) {
			rd := strings.NewReader(c.head)
			br := bufio.NewReader(rd)
			b.SetBytes(int64(len(c.head)))
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(c.head)
				br.Reset(rd)
				if _, err := http.ReadRequest(br); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
