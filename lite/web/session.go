package web

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// sessionLifetime is how long a login lasts. A session lives in the
// server's memory alone: logging out ends it at once, and so does a
// restart, so a copied cookie is worth no more than the session it came
// from.
const sessionLifetime = 12 * time.Hour

// sessions are the browsers that gave the token: random ids, each with
// the time it ends.
type sessions struct {
	mu   sync.Mutex
	ends map[string]time.Time
}

// start opens a session and returns its id.
func (s *sessions) start(now time.Time) string {
	b := make([]byte, 32)
	rand.Read(b) // never fails: crypto/rand panics rather than return an error
	id := hex.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ends == nil {
		s.ends = map[string]time.Time{}
	}
	for old, end := range s.ends { // the ended ones go as new ones come
		if !now.Before(end) {
			delete(s.ends, old)
		}
	}
	s.ends[id] = now.Add(sessionLifetime)
	return id
}

// valid reports whether id is a session that has not ended.
func (s *sessions) valid(id string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	end, ok := s.ends[id]
	return ok && now.Before(end)
}

// end closes session id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ends, id)
}
