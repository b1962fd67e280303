package web

import (
	"encoding/json"
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
	var f float64
	if json.Unmarshal(j.Progress, &f) == nil && f >= 0 && f <= 1 {
		return progressView{Progress: strconv.FormatFloat(f*100, 'f', -1, 64) + "%", IsFraction: true, Fraction: f}
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
