package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/web"
	"github.com/liteq/lite/lite/web/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// serveShutdown is how long requests in flight may finish at shutdown.
const serveShutdown = 5 * time.Second

// serveCmd serves the dashboard, the JSON API and the metrics, with
// workers when it is given a command.
type serveCmd struct {
	Addr      string   `default:"127.0.0.1:8080" help:"Address to listen on. Any but a loopback one needs a token."`
	Token     string   `env:"LITE_TOKEN" help:"Token every request must carry (Authorization: Bearer, or the login form)."`
	ReadOnly  bool     `help:"Serve no actions: no retry, cancel, release, purge or signal, no change to a queue or schedule."`
	AllowHost []string `placeholder:"NAME" help:"Another name the server is reached by, as browsers send it in the Host header; repeat for more (\"*\" for any: only with a token)."`
	workerFlags
	Command []string `arg:"" optional:"" passthrough:"" help:"A command to run once per job, after --, as lite work runs it (default: serve only)."`
}

// minToken is the shortest token a server off loopback takes: a guess of
// 16 random characters is out of reach, one of a short word is not.
const minToken = 16

// Validate refuses to serve off loopback without a token, and checks the
// workers' flags when there is a command.
func (c *serveCmd) Validate(kctx *kong.Context) error {
	if err := asGiven(kctx, &c.Command); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", c.Addr, err)
	}
	if !loopback(host) && c.Token == "" {
		return fmt.Errorf("--addr %s is not a loopback address: give a --token (or LITE_TOKEN), or listen on 127.0.0.1", c.Addr)
	}
	if !loopback(host) && len(c.Token) < minToken {
		return fmt.Errorf("--addr %s is not a loopback address: its --token must be at least %d characters, not %d (e.g. openssl rand -hex 16)", c.Addr, minToken, len(c.Token))
	}
	if len(argv(c.Command)) == 0 {
		if c.Replicate != "" {
			return errors.New("--replicate runs with the workers: give their command after --, as in: lite serve --replicate URL -- ./handler.sh")
		}
		return nil
	}
	if !slices.Contains(kctx.Args, "--") {
		return errors.New("give the workers' command after --, as in: lite serve -- ./handler.sh")
	}
	return c.validate(argv(c.Command))
}

// loopback reports whether host, of an --addr, is this machine alone. An
// empty host listens on every interface.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Run serves until SIGINT or SIGTERM, then lets requests in flight finish
// and, with workers, shuts them down as lite work does.
func (c *serveCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	hosts := slices.Clone(c.AllowHost)
	if host, _, _ := net.SplitHostPort(c.Addr); host != "" && !net.ParseIP(host).IsUnspecified() {
		hosts = append(hosts, host)
	}
	var collectors []prometheus.Collector
	var onEvent func(lite.Event)
	if len(argv(c.Command)) > 0 {
		outcomes := metrics.NewOutcomes()
		collectors, onEvent = append(collectors, outcomes), outcomes.OnEvent
	}
	srv := &http.Server{
		Handler: web.Handler(q, web.Options{Token: c.Token, ReadOnly: c.ReadOnly, Hosts: hosts, HostsSetting: "--allow-host",
			Metrics: metrics.Handler(q, collectors...)}),
		// A client may hold a connection only while it uses it: an idle
		// or trickling one is closed, so that no number of them exhausts
		// the process's file descriptors. The dashboard polls; nothing
		// streams for longer than a response's write.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
	}
	fmt.Fprintf(env.Stderr, "lite: serving http://%s/\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	// A listener that fails stops the workers too, gracefully.
	work, stopWork := context.WithCancel(ctx)
	defer stopWork()
	worked := make(chan error, 1)
	if onEvent != nil {
		go func() { worked <- c.work(work, env, g, q, argv(c.Command), false, onEvent) }()
	} else {
		close(worked)
	}
	select {
	case err = <-served:
		stopWork()
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveShutdown)
	defer cancel()
	err = errors.Join(err, srv.Shutdown(stop))
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, <-worked)
}
