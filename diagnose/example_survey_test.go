package diagnose_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/fleetsim/simtsdb"
	"github.com/whyslow/whyslow/snapshot"
	_ "github.com/whyslow/whyslow/snapshot/tsdb" // ReadEach streams TSDB directories
)

// A long history is diagnosed in two reads, neither of which holds it
// whole: a survey of the TSDB one target at a time, then a read of only
// the windows the survey chose, reduced target by target. The report is
// the one Diagnose gives for the whole evidence.
func ExampleSurveyor() {
	// Three pods of the KV-cache scenario, with their share of its traffic.
	spec, _ := fleetsim.LookupScenario("kv-preemption")
	cfg := spec.Config
	cfg.NumPods = 3
	for i := range cfg.Workload.Phases {
		cfg.Workload.Phases[i].Rate *= 3.0 / 8
	}
	fleet, err := fleetsim.Run(cfg)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "whyslow-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := simtsdb.Write(fleet, dir, fleetsim.TSDBOptions{HeadSpan: -1}); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	opts := diagnose.Options{MaxWindow: 10 * time.Minute}
	sel := opts.Selection()

	// The survey: every target's samples are visited once and dropped.
	s, err := diagnose.NewSurveyor(opts)
	if err != nil {
		log.Fatal(err)
	}
	// Over 6 h, the read's check of scrape times comes after the targets;
	// where it must leave a scrape out, the survey starts over.
	sel.Revisit = func() (err error) {
		s, err = diagnose.NewSurveyor(opts)
		return err
	}
	// It decodes only what it measures: the other families' series are
	// listed by their labels, for all targets (LabelsOnly) and, target by
	// target, the candidates the catalog does not match (LabelsOnlyFor).
	sel.LabelsOnly = s.LabelsOnly()
	sel.ForTarget = func(sketch *snapshot.Target) snapshot.TargetSelection {
		return snapshot.TargetSelection{LabelsOnly: s.LabelsOnlyFor(sketch)}
	}
	add := func(t *snapshot.Target) error { return s.Add(t) }
	var sv *diagnose.Survey
	for sv == nil {
		if _, err := snapshot.ReadEach(ctx, []string{dir}, sel, add); err != nil {
			log.Fatal(err)
		}
		// again: a replica started in another minute than the first one
		// read, or a target's sketch foretold another match.
		var again bool
		if sv, again, err = s.Survey(); err != nil {
			log.Fatal(err)
		} else if again {
			sv = nil
		}
	}
	base, inc := sv.Windows()
	fmt.Println("baseline", base.Start.Format(time.TimeOnly), "to", base.End.Format(time.TimeOnly))
	fmt.Println("incident", inc.Start.Format(time.TimeOnly), "to", inc.End.Format(time.TimeOnly))

	// Only the windows (widened by the lookback) are read for the report,
	// one target at a time: Reduce measures its histograms over the
	// windows and drops their samples, so that the diagnosis holds a few
	// numbers per replica instead of its buckets.
	ranges := sv.ReadRanges() // here one: the windows are adjacent
	o := sel
	o.Start, o.End, o.Revisit = ranges[0].Start, ranges[len(ranges)-1].End, nil
	o.LabelsOnly, o.ForTarget = nil, nil // every sample of the windows
	var kept []*snapshot.Target
	ev, err := snapshot.ReadEach(ctx, []string{dir}, o, func(t *snapshot.Target) error {
		t, err := sv.Reduce(t)
		kept = append(kept, t)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	ev.Targets = kept
	opts.Survey = sv
	rep, err := diagnose.Diagnose(ev, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("verdict:", rep.Verdict)
	fmt.Println("timeline points:", len(rep.Timelines[0].Points))
	// Output:
	// baseline 10:20:00 to 10:30:00
	// incident 10:30:00 to 10:40:00
	// verdict: kv-preemption
	// timeline points: 60
}
