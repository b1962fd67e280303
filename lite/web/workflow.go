package web

import (
	"fmt"
	"html/template"
	"net/http"
	"strconv"

	"github.com/liteq/lite/lite"
)

// maxGraph caps the jobs of a graph that a request may ask for.
const maxGraph = 10000

// routeWorkflow serves a batch's page, a job's graph, and the graph in
// the API (a batch's jobs are api/jobs?batch=ID).
func (s *server) routeWorkflow(mux *http.ServeMux) {
	mux.HandleFunc("GET /batches/{id}", s.batchPage)
	mux.HandleFunc("GET /jobs/{id}/graph", s.graphPage)
	mux.HandleFunc("GET /api/jobs/{id}/graph", func(w http.ResponseWriter, r *http.Request) {
		id, limit, err := graphRequest(r)
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
		g, err := s.q.Graph(r.Context(), id, limit)
		s.reply(w, r, g, err)
	})
}

// batchView is a batch's page: its progress and callback, and a page of
// its jobs, in the state its filter asks for.
type batchView struct {
	Batch lite.Batch
	// Ended is how many of its jobs ended, done, dead or cancelled.
	Ended int
	// Callback is the callback's payload, escaped and cut.
	Callback string
	jobsView
}

// Link is the query of the batch's page before id before (0: the first):
// the path names the batch.
func (v batchView) Link(before int64) template.URL {
	f := v.Filter
	f.Batch = 0
	return pageLink(f, before)
}

func (s *server) batchPage(w http.ResponseWriter, r *http.Request) {
	id, err := pathNumber(r, "batch")
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	f, err := parseFilter(r)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	f.Batch = id
	v := batchView{}
	if v.Batch, err = s.q.GetBatch(r.Context(), id); err == nil {
		v.jobsView, err = s.jobsView(r.Context(), f)
	}
	if err != nil {
		s.fail(w, r, status(err), err.Error())
		return
	}
	v.Ended = v.Batch.Total - v.Batch.Pending()
	if c := v.Batch.Callback; c != nil {
		v.Callback = cut(field(string(c.Payload)))
	}
	s.render(w, r, http.StatusOK, "batch", v)
}

// graphView is a job's graph: its jobs by layer, and how many are in each
// state.
type graphView struct {
	ID     int64 // the job whose graph it is
	Graph  lite.Graph
	Layers [][]lite.GraphJob
	Counts []stateCount
	Limit  int
}

func (s *server) graphPage(w http.ResponseWriter, r *http.Request) {
	v := graphView{}
	var err error
	if v.ID, v.Limit, err = graphRequest(r); err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if v.Graph, err = s.q.Graph(r.Context(), v.ID, v.Limit); err != nil {
		s.fail(w, r, status(err), err.Error())
		return
	}
	counts := map[lite.State]int64{}
	for _, j := range v.Graph.Jobs {
		if j.Layer == len(v.Layers) {
			v.Layers = append(v.Layers, nil)
		}
		v.Layers[j.Layer] = append(v.Layers[j.Layer], j)
		counts[j.State]++
	}
	for _, st := range lite.States {
		if counts[st] > 0 {
			v.Counts = append(v.Counts, stateCount{st, counts[st]})
		}
	}
	s.render(w, r, http.StatusOK, "graph", v)
}

// graphRequest is the job the path names and the limit the query gives
// (limit, 1 to maxGraph; default lite.DefaultGraphLimit) of a graph.
func graphRequest(r *http.Request) (id int64, limit int, err error) {
	if id, err = pathID(r); err != nil {
		return 0, 0, err
	}
	limit = lite.DefaultGraphLimit
	if l := r.URL.Query().Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > maxGraph {
			return 0, 0, fmt.Errorf("limit must be 1 to %d, not %q", maxGraph, l)
		}
	}
	return id, limit, nil
}
