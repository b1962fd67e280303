package web

import (
	"fmt"
	"time"

	"github.com/liteq/lite/lite"
)

// chart is a queue's jobs done and dead per minute over the chart's
// window, drawn as SVG by the overview's template: one column per minute,
// the oldest first, done stacked on dead, scaled to the busiest minute.
type chart struct {
	Bars          []bar
	Width, Height int
	// Done and Dead are the window's totals.
	Done, Dead int64
}

// bar is one minute's column, in SVG units.
type bar struct {
	X, DoneY, DoneH, DeadY, DeadH int
	Title                         string
}

const (
	barWidth    = 3
	chartHeight = 30
)

// charts draws every queue's chart from the throughput's minutes, ending
// with the minute of now.
func charts(t []lite.Throughput, now time.Time) map[string]chart {
	minutes := int(chartWindow / time.Minute)
	last := now.Truncate(time.Minute)
	counts := map[string][][2]int64{}
	for _, m := range t {
		i := minutes - 1 - int(last.Sub(m.Minute)/time.Minute)
		if i < 0 || i >= minutes {
			continue
		}
		if counts[m.Queue] == nil {
			counts[m.Queue] = make([][2]int64, minutes)
		}
		counts[m.Queue][i] = [2]int64{m.Done, m.Dead}
	}
	out := make(map[string]chart, len(counts))
	for queue, c := range counts {
		var peak int64 = 1
		ch := chart{Width: minutes * barWidth, Height: chartHeight}
		for _, n := range c {
			peak = max(peak, n[0]+n[1])
			ch.Done += n[0]
			ch.Dead += n[1]
		}
		for i, n := range c {
			doneH := int(n[0] * chartHeight / peak)
			deadH := int(n[1] * chartHeight / peak)
			ch.Bars = append(ch.Bars, bar{
				X:     i * barWidth,
				DoneY: chartHeight - doneH, DoneH: doneH,
				DeadY: chartHeight - doneH - deadH, DeadH: deadH,
				Title: fmt.Sprintf("%s UTC: %d done, %d dead",
					last.Add(time.Duration(i-minutes+1)*time.Minute).UTC().Format("15:04"), n[0], n[1]),
			})
		}
		out[queue] = ch
	}
	return out
}
