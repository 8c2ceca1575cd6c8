package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/snapshot"
)

// checkWindow reports a window given on the command line that does not
// overlap the evidence at all: every number would be "cannot evaluate", so
// the window is almost certainly mistyped (a wrong day or time zone).
func checkWindow(flagName string, w snapshot.Window, ev *snapshot.Evidence) error {
	if w.IsZero() {
		return nil
	}
	first, last := ev.Span()
	if first.IsZero() {
		return nil
	}
	if w.End.Before(first) || w.Start.After(last) {
		return fmt.Errorf("%s %s–%s lies outside the evidence, whose scrapes span %s to %s",
			flagName, w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339),
			first.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkMetric reports a --metric that is neither a signal id of the catalog
// nor a histogram of the evidence, listing what is there.
func checkMetric(metric string, cat *catalog.Catalog, ev *snapshot.Evidence) error {
	if spec, ok := cat.Signal(catalog.SignalID(metric)); ok {
		return checkSignal(spec, cat, ev)
	}
	seen := map[string]bool{}
	for _, t := range ev.Targets {
		if t.Family(metric) != nil {
			return nil
		}
		for _, f := range t.Families {
			if len(f.Histograms) > 0 {
				seen[f.Name] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	const max = 12
	more := ""
	if len(names) > max {
		more = fmt.Sprintf(" and %d more", len(names)-max)
		names = names[:max]
	}
	if len(names) == 0 {
		return fmt.Errorf("--metric %s: not a signal id, and the evidence holds no histogram", metric)
	}
	return fmt.Errorf("--metric %s: not a signal id (see whyslow catalog) nor a histogram of the evidence; histograms present: %s%s",
		metric, strings.Join(names, ", "), more)
}

// checkModel reports a --model that no series carries.
func checkModel(model string, ev *snapshot.Evidence) error {
	if model == "" {
		return nil
	}
	models := ev.LabelValues("model_name")
	for _, m := range models {
		if m == model {
			return nil
		}
	}
	if len(models) == 0 {
		return fmt.Errorf("--model %s: no series carries a model_name label", model)
	}
	return fmt.Errorf("--model %s: no series carries model_name=%q (models seen: %s)", model, model, strings.Join(models, ", "))
}

// checkSignal reports a signal id that no target of the evidence exposes,
// with the metric names tried and, when the metrics carry another prefix
// than vllm:, the --alias that maps it.
func checkSignal(spec catalog.SignalSpec, cat *catalog.Catalog, ev *snapshot.Evidence) error {
	res := cat.Resolve(ev)
	for _, t := range res.Targets {
		if m, ok := t.Match(spec.ID); ok && m.Found() {
			return nil
		}
	}
	var tried []string
	for _, c := range spec.Candidates {
		tried = append(tried, c.Metric)
	}
	msg := fmt.Sprintf("--metric %s: no target of the evidence exposes signal %s", spec.ID, spec.ID)
	if len(tried) > 0 {
		msg += " (looked for " + strings.Join(tried, ", ") + fmt.Sprintf("; name another with --alias %s=METRIC)", spec.ID)
	} else {
		msg += fmt.Sprintf(" (it has no default metric: name one with --alias %s=METRIC)", spec.ID)
	}
	prefixes := map[string]bool{}
	for _, t := range ev.Targets {
		for name := range t.Families {
			if i := strings.Index(name, ":"); i > 0 {
				prefixes[name[:i+1]] = true
			}
		}
	}
	if !prefixes["vllm:"] && len(prefixes) > 0 {
		var ps []string
		for p := range prefixes {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		msg += fmt.Sprintf("; metric prefixes seen: %s (e.g. --alias vllm:=%s maps them)", strings.Join(ps, ", "), ps[0])
	}
	return errors.New(msg)
}
