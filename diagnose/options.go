package diagnose

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// DefaultMinWindow is the shortest baseline or incident window the
// change-point search may propose (Options.MinWindow): five minutes each
// side, so that each window holds at least a few scrape intervals and,
// at typical traffic, hundreds of requests.
const DefaultMinWindow = 5 * time.Minute

// DefaultMaxWindow bounds the baseline and incident windows Diagnose
// chooses itself (Options.MaxWindow): half an hour on each side of the
// change point. The half hour before a change is the fleet as it was
// just before; a longer baseline mixes in the load cycles of the day
// and older incidents, and a diagnosis of a week of history would hold
// the whole week's samples. Half an hour at vLLM's usual load holds
// thousands of requests and 30 noise intervals of a minute.
const DefaultMaxWindow = 30 * time.Minute

// Options control Diagnose. The zero value is usable: it diagnoses the
// whole evidence with the default catalog and thresholds, chooses the
// windows itself and splits the fleet by model when it serves several.
// Options is a struct so that it can grow without breaking callers.
type Options struct {
	// Catalog maps signals to metric names; nil means catalog.Default().
	// Adapt a catalog with Alias (a gateway's client-side TTFT histogram,
	// a custom GPU metric) or WithPrefix (Ray's ray_vllm:).
	Catalog *catalog.Catalog

	// Baseline and Incident are the windows to compare. A zero Incident
	// lets Diagnose choose both windows (see the package documentation,
	// "Windows"). A zero Baseline with a given Incident means the
	// MaxWindow before the incident (From "preceding"; all of the
	// evidence before it with a negative MaxWindow), or no baseline when
	// the incident starts at the first scrape.
	Baseline, Incident snapshot.Window

	// SLO holds optional targets; a symptom without a target is judged
	// against the baseline.
	SLO rules.SLO
	// Thresholds are the limits of the decision map; the zero value
	// means rules.DefaultThresholds.
	Thresholds rules.Thresholds

	// Model, when not empty, keeps only the series whose model_name label
	// equals it (and the target-level series, such as the GPU exporter's,
	// of the targets that serve it).
	Model string
	// By is the label whose values split the evidence into groups, each
	// diagnosed on its own (report.Report.Groups): "model_name", or a label a
	// gateway adds such as a workload type. Empty means model_name when
	// the evidence serves several models, else no split. Signals are
	// never merged across models whatever By says: with another label,
	// each group is further split by model when several are present.
	By string

	// MinWindow is the shortest window on each side of a proposed change
	// point; zero means DefaultMinWindow.
	MinWindow time.Duration
	// MaxWindow is the longest window Diagnose chooses on each side of
	// the change point (or of the middle of the evidence, when it finds
	// none): the baseline ends and the incident starts there, each at
	// most MaxWindow long. Zero means DefaultMaxWindow; a negative value,
	// no bound (every scrape before the change point against every scrape
	// after it). Given windows are used as given; a baseline that is not
	// given ("preceding") is at most MaxWindow too.
	MaxWindow time.Duration
	// Quantiles are reported for each histogram signal; nil means
	// 0.5, 0.95 and 0.99. The decision map always gets p50, p95 and p99.
	Quantiles []float64
	// TimelineStep is the interval of the timelines and of the
	// change-point search; zero means one minute or the scrape interval,
	// whichever is larger.
	TimelineStep time.Duration

	// Survey, when set, is the survey of the whole history (see
	// Surveyor), and the evidence given to Diagnose need hold only the
	// windows the survey chose or was given (Survey.ReadRanges): the
	// scrape statistics, the timelines and the change point come from
	// the survey, the window measures from the evidence. The other
	// options, Baseline and Incident among them, must be those the
	// survey was made with.
	Survey *Survey
}

// settings are Options with the defaults filled in.
type settings struct {
	Options
	catalog   catalog.Catalog
	quantiles []float64
}

func (o Options) settings() (settings, error) {
	s := settings{Options: o}
	if o.Catalog != nil {
		s.catalog = *o.Catalog
	} else {
		s.catalog = catalog.Default()
	}
	if s.Thresholds == (rules.Thresholds{}) {
		s.Thresholds = rules.DefaultThresholds
	}
	if s.MinWindow == 0 {
		s.MinWindow = DefaultMinWindow
	}
	if s.MaxWindow == 0 {
		s.MaxWindow = DefaultMaxWindow
	}
	if s.MaxWindow > 0 && s.MaxWindow < s.MinWindow {
		return s, fmt.Errorf("diagnose: MaxWindow %v is shorter than MinWindow %v", s.MaxWindow, s.MinWindow)
	}
	if s.MinWindow < 0 {
		return s, fmt.Errorf("diagnose: negative MinWindow %v", o.MinWindow)
	}
	if o.TimelineStep < 0 {
		return s, fmt.Errorf("diagnose: negative TimelineStep %v", o.TimelineStep)
	}
	s.quantiles = []float64{0.5, 0.95, 0.99}
	if o.Quantiles != nil {
		for _, q := range o.Quantiles {
			if math.IsNaN(q) || q < 0 || q > 1 {
				return s, fmt.Errorf("diagnose: quantile %v outside [0, 1]", q)
			}
		}
		s.quantiles = slices.Clone(o.Quantiles)
		slices.Sort(s.quantiles)
	}
	for _, w := range []struct {
		name string
		w    snapshot.Window
	}{{"Baseline", o.Baseline}, {"Incident", o.Incident}} {
		if w.w.IsZero() {
			continue
		}
		if w.w.Start.IsZero() || w.w.End.IsZero() || !w.w.End.After(w.w.Start) {
			return s, fmt.Errorf("diagnose: %s window %v: needs a start before its end", w.name, w.w)
		}
	}
	if !o.Baseline.IsZero() && o.Incident.IsZero() {
		return s, fmt.Errorf("diagnose: a Baseline window needs an Incident window")
	}
	return s, nil
}
