package httpd_test

import (
	"fmt"
	"net/http"

	"github.com/valkyria/aio/httpd"
)

// "OPTIONS *" asks about the server, not a resource: the Server answers
// it before its Handler, an empty 200, as net/http's does, unless
// Config.DisableGeneralOptionsHandler hands it to the Handler.
func ExampleConfig_disableGeneralOptionsHandler() {
	mux := httpd.NewMux()
	mux.HandleFunc("/", func(r *httpd.Request) httpd.Reply {
		return httpd.Text(200, "a resource")
	})
	url, stop := serve(mux)
	defer stop()

	req, _ := http.NewRequest("OPTIONS", url, nil)
	req.URL.Opaque = "*" // the request target "*"
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.ContentLength)
	// Output: 200 0
}
