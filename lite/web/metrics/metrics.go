// Package metrics exposes a lite queue to Prometheus: its available and
// running jobs by queue, the age of each queue's oldest ready job, which
// queues are paused or capped in how many jobs run at once, and each
// queue's done, dead, cancelled and retried jobs, read from the database
// at each scrape (so every process on the file is counted), and the
// events this process's workers reported, through Outcomes. Finished jobs
// are counted by the counters the file keeps apart from the jobs rather
// than read: counting a million finished rows at every scrape would cost
// seconds, and retention would lower the count. A queue known to the
// file's settings or counters keeps its series, at zero, while it is
// empty.
//
// It is a package of its own so that a program that mounts the dashboard
// (package web) without metrics does not link the Prometheus client:
//
//	h := web.Handler(q, web.Options{Metrics: metrics.Handler(q)})
//	w, err := lite.NewWorker(q, lite.WorkerOptions{}) // its events counted too
package metrics

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// scrapeTimeout bounds the database read of one scrape: Collect is given
// no context, and a scrape that hangs on a locked file helps no one.
const scrapeTimeout = 5 * time.Second

// Handler serves the metrics of q, and of each extra collector, in the
// Prometheus text format, from a registry of its own. The events of every
// Worker of q in this process are counted (lite_worker_events_total)
// through Queue.ObserveEvents, however the worker was made, unless extra
// holds an Outcomes of the caller's, which then counts what it is given.
func Handler(q *lite.Queue, extra ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(q))
	if !slices.ContainsFunc(extra, func(c prometheus.Collector) bool { _, ok := c.(*Outcomes); return ok }) {
		o := NewOutcomes()
		q.ObserveEvents(o.OnEvent) // for as long as the queue: the handler has no end
		reg.MustRegister(o)
	}
	reg.MustRegister(extra...)
	// A metric that fails is left out and the rest are served: one bad
	// row must not blank a dashboard, nor send a stack trace to a client.
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// label makes a queue name a label value. The Prometheus client panics on
// invalid UTF-8, and lite refuses such names at enqueue, but a row that
// other SQL or an older lite wrote may hold one: its bytes that are not
// UTF-8 become U+FFFD rather than crash a worker or a scrape.
func label(queue string) string { return strings.ToValidUTF8(queue, "\uFFFD") }

var (
	jobsDesc = prometheus.NewDesc("lite_jobs", "Unfinished jobs in the database (available, running), by queue and state.",
		[]string{"queue", "state"}, nil)
	oldestDesc = prometheus.NewDesc("lite_oldest_ready_seconds",
		"How long the oldest available job whose run_at has come has waited, by queue; 0 when none waits.",
		[]string{"queue"}, nil)
	pausedDesc = prometheus.NewDesc("lite_queue_paused",
		"1 while the queue is paused (no job of it starts), 0 otherwise, by queue.",
		[]string{"queue"}, nil)
	outcomesDesc = prometheus.NewDesc("lite_jobs_outcomes_total",
		"Jobs that finished done, dead or cancelled, and that Retry started over, by queue and outcome, in every process; kept apart from the jobs, so retention never lowers them.",
		[]string{"queue", "outcome"}, nil)
	parkedDesc = prometheus.NewDesc("lite_jobs_parked",
		"Available jobs parked by a durable sleep (reason sleep) or awaiting a signal (reason signal), by queue; counted in lite_jobs' available too.",
		[]string{"queue", "reason"}, nil)
	maxRunningDesc = prometheus.NewDesc("lite_queue_max_running",
		"How many of the queue's jobs may run at once, by queue; absent when there is no such limit.",
		[]string{"queue"}, nil)
)

// collector reads q's stats at each scrape.
type collector struct{ q *lite.Queue }

// NewCollector is a collector of q's available and running jobs by queue
// (lite_jobs, with a state label), of each queue's oldest ready age
// (lite_oldest_ready_seconds), its parked jobs (lite_jobs_parked, with a
// reason label), whether it is paused (lite_queue_paused)
// and its max running limit (lite_queue_max_running), for a program that
// has a Prometheus registry of its own.
func NewCollector(q *lite.Queue) prometheus.Collector { return collector{q} }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- oldestDesc
	ch <- parkedDesc
	ch <- pausedDesc
	ch <- maxRunningDesc
	ch <- outcomesDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	stats, err := c.q.Backlog(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
		return
	}
	counters, err := c.q.Counters(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(outcomesDesc, err)
		return
	}
	for _, s := range withCounted(stats, counters) {
		c.collectBacklog(ch, s)
	}
	for _, n := range counters {
		for outcome, v := range map[string]int64{"done": n.Done, "dead": n.Dead, "cancelled": n.Cancelled, "retried": n.Retried} {
			ch <- prometheus.MustNewConstMetric(outcomesDesc, prometheus.CounterValue, float64(v), label(n.Queue), outcome)
		}
	}
}

// withCounted adds to stats a queue with no backlog and no settings that
// has counters: a queue keeps its series, at zero, while it is empty.
func withCounted(stats []lite.QueueStats, counters []lite.Counters) []lite.QueueStats {
	for _, n := range counters {
		if !slices.ContainsFunc(stats, func(s lite.QueueStats) bool { return s.Queue == n.Queue }) {
			stats = append(stats, lite.QueueStats{Queue: n.Queue})
		}
	}
	return stats
}

func (c collector) collectBacklog(ch chan<- prometheus.Metric, s lite.QueueStats) {
	for _, state := range []lite.State{lite.StateAvailable, lite.StateRunning} {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(s.Counts[state]), label(s.Queue), string(state))
	}
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, s.OldestReady.Seconds(), label(s.Queue))
	ch <- prometheus.MustNewConstMetric(parkedDesc, prometheus.GaugeValue, float64(s.Sleeping), label(s.Queue), lite.ParkedSleep)
	ch <- prometheus.MustNewConstMetric(parkedDesc, prometheus.GaugeValue, float64(s.Awaiting), label(s.Queue), lite.ParkedSignal)
	paused := 0.0
	if s.Paused {
		paused = 1
	}
	ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, paused, label(s.Queue))
	if s.Limits.MaxRunning > 0 {
		ch <- prometheus.MustNewConstMetric(maxRunningDesc, prometheus.GaugeValue, float64(s.Limits.MaxRunning), label(s.Queue))
	}
}

// Outcomes counts the events of this process's workers by queue and event
// (lite_worker_events_total): started, done, failed, snoozed, parked,
// released, reclaimed, lease lost, and a handler's durable calls (step,
// step replayed, signal received); and the parks by what the job waits
// for (lite_worker_parked_total: sleep, signal, children). Plug its
// OnEvent into WorkerOptions.OnEvent.
type Outcomes struct{ events, parked *prometheus.CounterVec }

// NewOutcomes makes an Outcomes with every count at zero.
func NewOutcomes() *Outcomes {
	return &Outcomes{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lite_worker_events_total",
			Help: "Events of this process's workers, by queue and event: a job's outcomes, and its handler's steps run (step), steps answered from their record (step replayed) and signals taken (signal received).",
		}, []string{"queue", "event"}),
		parked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lite_worker_parked_total",
			Help: "Jobs this process's workers parked, by queue and what the job waits for: its sleep's time (sleep), a signal (signal), the jobs it awaits (children).",
		}, []string{"queue", "reason"}),
	}
}

// OnEvent counts e. It never blocks, as WorkerOptions.OnEvent must not.
// A reclaimed job's event carries no job, so its queue is empty.
func (o *Outcomes) OnEvent(e lite.Event) {
	queue := ""
	if e.Job != nil {
		queue = label(e.Job.Queue)
	}
	o.events.WithLabelValues(queue, string(e.Kind)).Inc()
	if e.Kind == lite.EventParked {
		o.parked.WithLabelValues(queue, string(e.Why)).Inc()
	}
}

// Describe is prometheus.Collector's.
func (o *Outcomes) Describe(ch chan<- *prometheus.Desc) {
	o.events.Describe(ch)
	o.parked.Describe(ch)
}

// Collect is prometheus.Collector's.
func (o *Outcomes) Collect(ch chan<- prometheus.Metric) {
	o.events.Collect(ch)
	o.parked.Collect(ch)
}
