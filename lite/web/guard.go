package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"net"
	"net/http"
	"slices"
	"strings"
)

// contentSecurityPolicy allows the page's own scripts, styles and images
// and nothing else: no inline script or style, no eval, no frames, no
// form posted elsewhere. A job field that slipped through unescaped still
// could not run.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// sessionCookie carries a browser's proof that it gave the token.
const sessionCookie = "lite_session"

// loopbackHosts are always allowed: a rebinding attack needs a name of its
// own, and these are the names of the machine itself.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// guard wraps every request in the checks, outermost first: security
// headers on every answer, then the Host check, without a token the
// client's address, the cross-origin check of unsafe methods, and the
// token. The login form and the static files need
// no token (the login page is made of them).
func (s *server) guard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusForbidden, "cross-origin request refused")
	}))
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/login" || strings.HasPrefix(r.URL.Path, "/static/"):
		case !s.authorized(r):
			s.unauthorized(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /login", s.login())
	mux.Handle("POST /logout", http.HandlerFunc(s.logout))
	mux.Handle("/", auth)
	checked := cop.Handler(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if !s.hostAllowed(r.Host) {
			s.fail(w, r, http.StatusMisdirectedRequest, "host not allowed: the server expects another Host header (see "+s.opts.HostsSetting+")")
			return
		}
		if s.opts.Token == "" && !localClient(r) {
			s.fail(w, r, http.StatusForbidden, "refused: without a token the server answers clients on this machine only (set a token)")
			return
		}
		checked.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether host, a Host header, names this server.
func (s *server) hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if slices.Contains(loopbackHosts, host) || slices.Contains(s.opts.Hosts, "*") {
		return true
	}
	return slices.ContainsFunc(s.opts.Hosts, func(allowed string) bool { return strings.EqualFold(allowed, host) })
}

// localClient reports whether r comes from this machine: a loopback
// address, by the connection's own address rather than any header a
// client or proxy sets, or a Unix socket.
func localClient(r *http.Request) bool {
	if _, unix := r.Context().Value(http.LocalAddrContextKey).(*net.UnixAddr); unix {
		return true
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authorized reports whether r carries the token, as a bearer token or as
// the session cookie; without a Token every request is.
func (s *server) authorized(r *http.Request) bool {
	if s.opts.Token == "" {
		return true
	}
	// The scheme's case does not matter (RFC 9110, 11.1).
	if scheme, bearer, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return equal(strings.TrimSpace(bearer), s.opts.Token)
	}
	c, err := r.Cookie(sessionCookie)
	return err == nil && s.sessions.valid(c.Value, s.opts.Now())
}

// equal compares secrets in constant time; hashing first hides their
// lengths too.
func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return hmac.Equal(ha[:], hb[:])
}

// unauthorized answers a request without the token: 401, with the login
// form for a browser's page.
func (s *server) unauthorized(w http.ResponseWriter, r *http.Request) {
	if machine(r) || r.Method != http.MethodGet {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lite"`)
		s.fail(w, r, http.StatusUnauthorized, "a token is required: Authorization: Bearer TOKEN")
		return
	}
	s.render(w, r, http.StatusUnauthorized, "login", nil)
}

// login checks the posted token and, when it is right, sets the session
// cookie: HttpOnly so no script reads it, SameSite=Strict so no other
// site's request carries it. Its path is left to the browser (the login
// URL's directory), which is wherever the handler is mounted.
func (s *server) login() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Token == "" || !equal(r.PostFormValue("token"), s.opts.Token) {
			s.render(w, r, http.StatusUnauthorized, "login", "wrong token")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.sessions.start(s.opts.Now()),
			MaxAge: int(sessionLifetime.Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
		seeOther(w, root(r))
	})
}

// logout ends the session on the server, not only in the browser.
func (s *server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
	seeOther(w, root(r))
}

// overTLS reports whether the browser reached r over TLS, directly or
// through a proxy that ended it: its cookie is then sent over TLS only.
// A forged header can only make the cookie stricter.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// machine reports whether r is for the API or the metrics, which answer
// in JSON or plain text rather than pages.
func machine(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/metrics"
}

// root is the relative URL of the handler's root from r's page, such as
// "../" from jobs/7: links made from it work wherever the handler is
// mounted.
func root(r *http.Request) string {
	depth := strings.Count(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if depth == 0 {
		return "./"
	}
	return strings.Repeat("../", depth)
}

// seeOther redirects to a relative URL. http.Redirect would make it
// absolute from the path the handler sees, losing the prefix it is
// mounted under; the browser resolves it against the URL it asked for.
func seeOther(w http.ResponseWriter, url string) {
	w.Header().Set("Location", url)
	w.WriteHeader(http.StatusSeeOther)
}
