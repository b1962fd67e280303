// Package web is lite's dashboard and JSON API as an http.Handler: a
// program mounts it under a prefix of its own, and `lite serve` wraps it.
//
//	mux.Handle("/queue/", http.StripPrefix("/queue", web.Handler(q, web.Options{Token: token})))
//
// The pages are server-rendered HTML with a little embedded CSS and
// JavaScript (no outside assets, so it works offline); every link is
// relative, so the handler needs no idea of where it is mounted. The JSON
// API under api/ serves the same reads and actions in the shapes `lite
// --json` prints.
//
// It is safe by default: every response carries a strict
// Content-Security-Policy; a request whose Host header is not one the
// handler expects is refused (DNS rebinding); without a Token a client
// whose address (the connection's, not a header) is not loopback is
// refused with 403, so a program that mounts the handler on 0.0.0.0 is
// no more open than `lite serve`; actions are POST only and a cross-site
// POST is refused (http.CrossOriginProtection); with a Token every request
// must carry it (Authorization: Bearer, or the session cookie the login
// form sets); ReadOnly leaves out every action. Every job
// field is untrusted and shows as text.
//
// Prometheus metrics live in the subpackage metrics, so that a program
// which mounts the dashboard alone does not link the Prometheus client;
// pass its handler as Options.Metrics to serve it behind the same checks.
package web
