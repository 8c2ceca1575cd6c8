package snapshot

import "fmt"

// ScrapeWindow returns the window from the target's first to its last
// scrape, or the zero Window when it has fewer than two scrapes.
func (t *Target) ScrapeWindow() Window {
	if len(t.Scrapes) < 2 {
		return Window{}
	}
	return Window{Start: t.Scrapes[0].Time, End: t.Scrapes[len(t.Scrapes)-1].Time}
}

// resolve replaces the zero Window by the target's ScrapeWindow, so that a
// series that appeared after the target's first scrape is flagged
// StartClipped instead of silently measured over a shorter time.
func (t *Target) resolve(w Window) Window {
	if w.IsZero() {
		return t.ScrapeWindow()
	}
	return w
}

// onFamily evaluates eval on the named family over w (the zero Window
// resolved to ScrapeWindow). A missing family is an error wrapping
// ErrNotEvaluable; errors start with the target's name.
func onFamily[R any](t *Target, name string, w Window, eval func(*Family, Window) (R, error)) (R, error) {
	var zero R
	f := t.Family(name)
	if f == nil {
		return zero, fmt.Errorf("%s: %w: no family %s", t.Name, ErrNotEvaluable, name)
	}
	r, err := eval(f, t.resolve(w))
	if err != nil {
		return zero, fmt.Errorf("%s: %w", t.Name, err)
	}
	return r, nil
}

// Increase returns the increase over w of the counter family named family
// (its lookup name, such as "vllm:request_success_total"), summed over the
// series that match: the per-replica value of a counter, all engines
// together (see Family.Increase).
//
// The zero Window means the target's first to last scrape (ScrapeWindow); a
// target scraped once gives each counter's Lifetime value. A missing family
// is an error wrapping ErrNotEvaluable; errors start with the target's name.
func (t *Target) Increase(family string, w Window, match map[string]string) (CounterIncrease, error) {
	return onFamily(t, family, w, func(f *Family, w Window) (CounterIncrease, error) { return f.Increase(w, match) })
}

// HistogramIncrease returns the increase over w of the histogram family
// named family (its base name, such as "vllm:time_to_first_token_seconds"),
// merged over the series that match: the per-replica histogram, all engines
// together (see Family.HistogramIncrease). Windows and errors are as for
// Target.Increase.
func (t *Target) HistogramIncrease(family string, w Window, match map[string]string) (HistogramIncrease, error) {
	return onFamily(t, family, w, func(f *Family, w Window) (HistogramIncrease, error) { return f.HistogramIncrease(w, match) })
}

// Gauge summarizes over w the gauge family named family, its matching
// series combined with agg: AggregateSum for vLLM's waiting and running
// requests across engines, AggregateMean for KV cache usage (see
// Family.Gauge). Windows and errors are as for Target.Increase.
func (t *Target) Gauge(family string, w Window, match map[string]string, agg Aggregation) (GaugeStats, error) {
	return onFamily(t, family, w, func(f *Family, w Window) (GaugeStats, error) { return f.Gauge(w, match, agg) })
}
