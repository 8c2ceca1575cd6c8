package matrix

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// The axes the matrix itself lacks, each a variant of
// every matrix case built from fleetsim's physics: scrapes every 5 and
// every 60 s, fleets of 2 and 32 pods, and incidents that start away from
// the middle of the run and last 10-15 minutes. (Linear ramps are a
// matrix case of their own, queue-ramp.) An axis cell takes the knob of
// the table's nearest fleet size and is graded by its own ground truth
// (Result.Grade): the table was calibrated on the matrix' own timing and
// sizes, not on these.

// Axis names of AxisCells.
const (
	AxisScrape5s  = "scrape-5s"
	AxisScrape60s = "scrape-60s"
	AxisPods2     = "pods-2"
	AxisPods32    = "pods-32"
	AxisOffCentre = "off-centre"
)

// Axes lists the axis names in the order AxisCells builds them.
var Axes = []string{AxisScrape5s, AxisScrape60s, AxisPods2, AxisPods32, AxisOffCentre}

// axisPods is the fleet size of the scrape and off-centre axes.
const axisPods = 8

// AxisCells returns every axis cell for the given seeds: every case on
// every axis at every severity (counter-cases once), except that
// off-centre timing applies to incidents and to the restart.
func AxisCells(seeds []uint64) []Cell {
	var out []Cell
	for _, axis := range Axes {
		for _, c := range fleetsim.MatrixCases() {
			if axis == AxisOffCentre && !c.Incident() && c.Name != "restart" {
				continue
			}
			sevs := []string{""}
			if c.Incident() {
				sevs = fleetsim.Severities
			}
			for _, sev := range sevs {
				for _, s := range seeds {
					if cell, ok := axisCell(axis, c, sev, s); ok {
						out = append(out, cell)
					}
				}
			}
		}
	}
	return out
}

// axisCell builds one axis cell; false when the table has no knob for
// the case.
func axisCell(axis string, c fleetsim.MatrixCase, sev string, seed uint64) (Cell, bool) {
	cell := Cell{Case: c.Name, Expect: c.Expect, Pods: axisPods, Seed: seed, Severity: sev, Axis: axis}
	table := axisPods
	switch axis {
	case AxisScrape5s:
		cell.Variant.ScrapeInterval = 5 * time.Second
	case AxisScrape60s:
		cell.Variant.ScrapeInterval = time.Minute
	case AxisPods2:
		cell.Pods, table = 2, nearestSize(2)
	case AxisPods32:
		cell.Pods, table = 32, nearestSize(32)
	case AxisOffCentre:
		cell.Variant.Start, cell.Variant.Length = offCentre(c.Name, seed)
	default:
		return Cell{}, false
	}
	if sev != "" {
		k, ok := fleetsim.MatrixKnob(c.Name, table, sev)
		if !ok {
			return Cell{}, false
		}
		cell.Knob = k
	}
	cell.Unresolvable = unresolvable(c.Name, cell.Variant.ScrapeInterval)
	return cell, true
}

// nearestSize is the matrix fleet size nearest to n (the larger on a
// tie): the per-pod load is the same at every size.
func nearestSize(n int) int {
	best := fleetsim.MatrixSizes[0]
	for _, s := range fleetsim.MatrixSizes {
		if abs(s-n) <= abs(best-n) {
			best = s
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// offCentre draws, from the case and seed, an incident start 8-16 or
// 24-28 minutes into the 40-minute run (never its middle) and a length
// of 10-15 minutes that ends by the end of the run.
func offCentre(name string, seed uint64) (start, length time.Duration) {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	rng := rand.New(rand.NewPCG(seed, h^0x0ff))
	starts := []int{8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 25, 26, 27, 28}
	start = time.Duration(starts[rng.IntN(len(starts))]) * time.Minute
	length = time.Duration(10*60+rng.IntN(5*60+1)) * time.Second
	return start, min(length, fleetsim.MatrixDuration-start)
}

// unresolvable reports whether scrapes every interval cannot show the
// case's cause: queue-burst's bursts recur every minute, so under scrapes
// a minute or more apart every interval holds one and the arrivals per
// interval are as even as steady traffic.
func unresolvable(name string, interval time.Duration) bool {
	return name == "queue-burst" && interval >= time.Minute
}

// Sample returns n cells drawn from cells without replacement by a
// generator seeded with seed, in the order of cells.
func Sample(cells []Cell, n int, seed uint64) []Cell {
	if n >= len(cells) {
		return cells
	}
	idx := rand.New(rand.NewPCG(seed, 31)).Perm(len(cells))[:n]
	slices.Sort(idx)
	out := make([]Cell, n)
	for i, j := range idx {
		out[i] = cells[j]
	}
	return out
}

// axisName is the suffix Cell.Name gives an axis cell.
func (c Cell) axisName() string {
	if c.Axis == "" {
		return ""
	}
	if c.Axis == AxisOffCentre {
		start, end := c.Variant.Span()
		return fmt.Sprintf("/%s-%v-%v", c.Axis, start, end)
	}
	return "/" + c.Axis
}
