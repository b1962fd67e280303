package bench

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// A single run's figures swing ±15% and more on a shared machine, so
// lite bench --runs N measures every figure N times, interleaving the
// durability modes so that a slow spell of the machine weighs on each,
// and reports each figure's median with the lowest and highest run beside
// it. A target is judged on the median.

// combineRuns folds the rows of several runs into one row per figure, in
// the order of the first run: the median value and ratio, with their
// range. A ratio's median is that of each run's own ratio, against the
// reference measured in the same run.
func combineRuns(runs [][]Row) []Row {
	if len(runs) == 1 {
		return runs[0]
	}
	type key struct{ sync, figure, unit string }
	var order []key
	byKey := map[key][]Row{}
	for _, rows := range runs {
		for _, r := range rows {
			k := key{r.Sync, r.Figure, r.Unit}
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
			}
			byKey[k] = append(byKey[k], r)
		}
	}
	out := make([]Row, 0, len(order))
	for _, k := range order {
		rows := byKey[k]
		row := rows[0]
		row.Runs = len(rows)
		row.Value, row.Min, row.Max = spread(rows, func(r Row) float64 { return r.Value })
		if row.Ratio != 0 {
			row.Ratio, row.RatioMin, row.RatioMax = spread(rows, func(r Row) float64 { return r.Ratio })
		}
		row.judge()
		out = append(out, row)
	}
	return out
}

// spread returns the median, lowest and highest of what value reads from
// rows; the median of an even count is the mean of the middle two.
func spread(rows []Row, value func(Row) float64) (median, lowest, highest float64) {
	v := make([]float64, len(rows))
	for i, r := range rows {
		v[i] = value(r)
	}
	slices.Sort(v)
	n := len(v)
	median = v[n/2]
	if n%2 == 0 {
		median = (v[n/2-1] + v[n/2]) / 2
	}
	return median, v[0], v[n-1]
}

// Print prints the figures as a table.
func Print(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	runs := 1
	for _, r := range rows {
		runs = max(runs, r.Runs)
	}
	if runs > 1 {
		fmt.Fprintf(w, "median [lowest–highest] of %d runs; targets are judged on the median\n", runs)
	}
	fmt.Fprintln(tw, "sync\tvalue\tunit\tratio\ttarget\tmet\t figure")
	for _, r := range rows {
		value, ratio, met := fmt.Sprintf("%.1f", r.Value), "", ""
		if r.Runs > 1 {
			value += fmt.Sprintf(" [%.1f–%.1f]", r.Min, r.Max)
		}
		if r.Ratio != 0 {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
			if r.Runs > 1 {
				ratio += fmt.Sprintf(" [%.2f–%.2f]", r.RatioMin, r.RatioMax)
			}
			ratio += " " + r.Against
		}
		if r.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*r.Met]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t %s\n", r.Sync, value, r.Unit, ratio, r.Target, met, r.Figure)
	}
	return tw.Flush()
}
