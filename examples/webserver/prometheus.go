package main

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd"
	"github.com/valkyria/aio/metrics"
)

// promHeader is /metrics' Content-Type.
var promHeader = []httpd.Field{{Name: "Content-Type", Value: metrics.ContentType}}

// statsHelp is the HELP text of each /stats key's metric. A key httpd adds
// later is exported too, with a HELP naming the key.
var statsHelp = map[string]string{
	"conns_open":           "TCP connections open now.",
	"streams_open":         "Requests (HTTP/1.1) and streams (HTTP/2) in progress now.",
	"requests":             "Requests whose handler was started.",
	"handlers_pending":     "Handler handles not yet terminal.",
	"cancelled":            "Handler handles that ended cancelled (disconnect, RST_STREAM, GOAWAY, drain deadline).",
	"responses_suppressed": "Responses not sent because their stream or connection was gone.",
	"arenas_in_use":        "Request arenas taken and not yet released.",
	"arenas_capacity":      "Request arenas in all, over all loops.",
	"refused":              "HTTP/2 streams refused (REFUSED_STREAM: no arena free, or past the stream limit), and times a connection stopped reading for want of an arena.",
	"arena_releases":       "Request arenas given back.",
	"panics":               "Handler panics, answered 500.",
	"bad_requests":         "Requests refused by the parser.",
}

// prometheusResponse is the /metrics page: st, the server's counters, as
// aio_httpd_<key> (a counter for an unsigned field of httpd.Stats, which
// only grows; a gauge for a signed one, a level), then the loops of rt
// (package metrics). Off the loop.
//
// A counter keeps its /stats key as its name, without Prometheus's usual
// _total suffix: the page promises "the same counters, names prefixed
// aio_httpd_", and a scraper that looks up aio_httpd_requests must find it.
func prometheusResponse(st httpd.Stats, rt *aio.Runtime) (httpd.Response, error) {
	var buf bytes.Buffer
	v := reflect.ValueOf(st)
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" || key == "-" {
			continue
		}
		help, ok := statsHelp[key]
		if !ok {
			help = "httpd.Stats." + f.Name + "."
		}
		name, kind, val := "aio_httpd_"+key, "gauge", ""
		switch fv := v.Field(i); {
		case fv.CanUint():
			kind, val = "counter", fmt.Sprint(fv.Uint())
		case fv.CanInt():
			val = fmt.Sprint(fv.Int())
		default:
			continue
		}
		fmt.Fprintf(&buf, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, help, name, kind, name, val)
	}
	if err := metrics.WritePrometheus(&buf, rt); err != nil {
		return httpd.Response{}, err
	}
	return httpd.Response{Status: 200, Header: promHeader, Body: buf.Bytes()}, nil
}
