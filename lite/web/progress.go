package web

import (
	"net/http"
	"strconv"

	"github.com/liteq/lite/lite"
)

// progressView is a job's progress as its page shows it: a fraction as a
// bar and a percentage, another value as its JSON text, escaped.
type progressView struct {
	Progress   string
	IsFraction bool
	Fraction   float64
}

func progressOf(j *lite.Job) progressView {
	if j.Progress == nil {
		return progressView{}
	}
	if pct, ok := j.Percent(); ok {
		return progressView{Progress: strconv.FormatFloat(pct, 'f', -1, 64) + "%", IsFraction: true, Fraction: pct / 100}
	}
	return progressView{Progress: field(string(j.Progress))}
}

// jobLive is the job page's progress and log, which the page refreshes
// while the job runs.
func (s *server) jobLive(w http.ResponseWriter, r *http.Request) {
	j, ok := s.job(w, r)
	if !ok {
		return
	}
	s.renderPart(w, r, http.StatusOK, "job", "progress", jobView{Job: j, progressView: progressOf(j)})
}
