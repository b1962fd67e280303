package lite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// Server connects lite to a database server. Package lite/pg provides the
// one for PostgreSQL; importing it for its side effect makes Open accept
// postgres:// URLs:
//
//	import _ "github.com/liteq/lite/lite/pg"
//
// A program that imports only lite links no server driver at all.
type Server interface {
	// Open returns a pool of connections to the database at url.
	Open(ctx context.Context, url string) (*sql.DB, error)
	// Listen calls notify for every notification on channel, received on
	// a connection of its own, until ctx ends, and each time it starts to
	// listen, the first time too, since notifications sent before were
	// lost to it. A dropped connection is reconnected by itself.
	Listen(ctx context.Context, url, channel string, notify func()) error
}

var servers = struct {
	sync.RWMutex
	m map[string]Server
}{m: map[string]Server{}}

// RegisterServer makes Open hand URLs of scheme (such as "postgres") to s.
// It is for server packages such as lite/pg, from their init; registering
// a scheme twice panics.
func RegisterServer(scheme string, s Server) {
	servers.Lock()
	defer servers.Unlock()
	if _, dup := servers.m[scheme]; dup {
		panic("lite: RegisterServer called twice for scheme " + scheme)
	}
	servers.m[scheme] = s
}

// serverScheme is the scheme of a database server URL, or "" for a path.
func serverScheme(path string) string {
	scheme, _, ok := strings.Cut(path, "://")
	if !ok {
		return ""
	}
	switch scheme {
	case "postgres", "postgresql":
		return "postgres"
	}
	return ""
}

func serverFor(scheme string) (Server, error) {
	servers.RLock()
	defer servers.RUnlock()
	s, ok := servers.m[scheme]
	if !ok {
		return nil, fmt.Errorf("no %s support in this program: import _ \"github.com/liteq/lite/lite/pg\"", scheme)
	}
	return s, nil
}

// IsServerURL reports whether dsn names a database server (postgres://…)
// rather than a SQLite file.
func IsServerURL(dsn string) bool { return serverScheme(dsn) != "" }

// Redact is dsn fit to print: a server URL without its password. A file
// path is returned as it is.
func Redact(dsn string) string {
	if !IsServerURL(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "(a server URL that does not parse)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
