package web

import (
	"net/http"
	"time"

	"github.com/liteq/lite/lite"
)

// Options configure the handler. The zero value serves every page and
// action, without a token, to clients on this machine (a loopback address
// or a Unix socket) whose requests are addressed to the loopback names.
type Options struct {
	// Token, when set, is required on every request: as
	// "Authorization: Bearer TOKEN" for the API and /metrics, or through
	// the login form, which sets a session cookie, for the browser.
	// Without one, a client whose address is not loopback is refused
	// with 403, whatever headers it sends, as `lite serve` refuses to
	// listen off loopback without a token. Behind a reverse proxy on the
	// same machine every client has the proxy's loopback address: give
	// a Token there.
	Token string
	// ReadOnly leaves out every action: none is rendered, and a posted
	// one is refused with 403.
	ReadOnly bool
	// Hosts are the names (or addresses) the server is reached by, as the
	// Host header gives them; a port is ignored. localhost, 127.0.0.1 and
	// ::1 are always allowed; "*" allows any name, which is only wise with
	// a Token. A request for another host is refused, so that a web page
	// on a name rebound to 127.0.0.1 cannot read the dashboard.
	Hosts []string
	// HostsSetting names the setting that allows another host, in the
	// refusal of a request for one. Default "Options.Hosts"; lite serve
	// names its flag.
	HostsSetting string
	// Metrics, if set, is served at metrics behind the same checks (see
	// package metrics).
	Metrics http.Handler
	// Now is the clock for ages shown (heartbeat, oldest ready job) and
	// for the end of a login session.
	// Default time.Now.
	Now func() time.Time
}

// Handler serves the dashboard, the JSON API and, with Options.Metrics,
// the metrics of q. Mount it at the root of a server or under a prefix
// with http.StripPrefix.
func Handler(q *lite.Queue, opts Options) http.Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.HostsSetting == "" {
		opts.HostsSetting = "Options.Hosts"
	}
	s := &server{q: q, opts: opts, pages: mustParsePages(opts.Now)}
	mux := http.NewServeMux()
	s.routePages(mux)
	s.routeAPI(mux)
	s.routeSignal(mux)
	s.routeNamed(mux, queues)
	s.routeNamed(mux, schedules)
	s.routeLimits(mux)
	s.routeSchedules(mux)
	s.routeBulk(mux)
	s.routeWorkflow(mux)
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles()))
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", opts.Metrics)
	}
	return s.guard(mux)
}

// server holds what every page and API call needs.
type server struct {
	q        *lite.Queue
	opts     Options
	pages    pages
	sessions sessions
}
