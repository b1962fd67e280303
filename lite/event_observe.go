package lite

import (
	"slices"
	"sync"
	"sync/atomic"
)

// observers are the functions ObserveEvents added: every Worker of the
// queue calls each with each of its events, after its own OnEvent. The
// list is swapped whole, so a worker reads it without a lock.
type observers struct {
	mu   sync.Mutex // serializes changes
	list atomic.Pointer[[]*func(Event)]
}

// ObserveEvents calls fn with every event of every Worker of q, from now
// until the returned stop is called: a package such as lite/web/metrics
// counts a process's worker events this way wherever its workers were
// made, without each program wiring WorkerOptions.OnEvent. fn is called
// from the goroutine that settled the job and must not block.
func (q *Queue) ObserveEvents(fn func(Event)) (stop func()) {
	p := &fn
	q.obs.change(func(list []*func(Event)) []*func(Event) { return append(list, p) })
	var once sync.Once
	return func() {
		once.Do(func() {
			q.obs.change(func(list []*func(Event)) []*func(Event) {
				return slices.DeleteFunc(list, func(f *func(Event)) bool { return f == p })
			})
		})
	}
}

func (o *observers) change(edit func([]*func(Event)) []*func(Event)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var list []*func(Event)
	if old := o.list.Load(); old != nil {
		list = *old
	}
	next := edit(slices.Clone(list))
	o.list.Store(&next)
}

func (o *observers) emit(ev Event) {
	if list := o.list.Load(); list != nil {
		for _, f := range *list {
			(*f)(ev)
		}
	}
}
