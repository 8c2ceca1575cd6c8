package rules_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/whyslow/whyslow/rules"
)

// FuzzEvaluate scales the facts of the scenarios by fuzzed factors (and
// drops some) and checks the invariants of Evaluate: valid statuses and
// verdict, ranking order, no-incident only when every symptom was
// evaluated and is absent, a verdict hypothesis always supported, JSON
// always encodable.
func FuzzEvaluate(f *testing.F) {
	f.Add(uint8(0), 1.0, 1.0, uint64(0))
	f.Add(uint8(1), 2.0, 0.5, uint64(0xff))
	f.Add(uint8(6), math.NaN(), 0.0, uint64(1<<40-1))
	f.Add(uint8(9), math.Inf(1), -1.0, uint64(12345))
	scenarios := []func() rules.Facts{healthy, queueSustained, queueBurst, longPrompts, prefixLoss,
		decodePressure, kvPreemption, outsideGPU, hotspot, proxy, highKVHealthy, lowTraffic}
	ids := rules.FactIDs()
	f.Fuzz(func(t *testing.T, sc uint8, scaleV, scaleB float64, mask uint64) {
		fs := scenarios[int(sc)%len(scenarios)]()
		for i, id := range ids {
			v, ok := fs[id]
			if !ok {
				continue
			}
			switch (mask >> (uint(i) % 64)) & 3 {
			case 1:
				delete(fs, id)
			case 2:
				v.Incident.Value *= scaleV
				v.Baseline.Value *= scaleB
				fs[id] = v
			}
		}
		r := rules.Evaluate(fs, rules.SLO{}, rules.DefaultThresholds)
		order := map[rules.Status]int{rules.Supported: 0, rules.NotEvaluable: 1, rules.Contradicted: 2}
		if len(r.Findings) != len(rules.Map()) {
			t.Fatalf("%d findings", len(r.Findings))
		}
		for i, fd := range r.Findings {
			if _, ok := order[fd.Status]; !ok {
				t.Fatalf("bad status %q", fd.Status)
			}
			if fd.Score < 0 || fd.Score > 1 || math.IsNaN(fd.Score) {
				t.Fatalf("score %v", fd.Score)
			}
			if fd.Status == rules.Supported && len(fd.Missing) > 0 {
				t.Fatalf("supported with missing facts: %v", fd.Missing)
			}
			if fd.Status == rules.NotEvaluable && len(fd.Missing) == 0 {
				t.Fatalf("not-evaluable without a missing fact: %s", fd)
			}
			if i > 0 && order[r.Findings[i-1].Status] > order[fd.Status] {
				t.Fatalf("rank order broken at %d", i)
			}
		}
		present, allKnown := false, true
		for _, s := range r.Symptoms {
			present = present || s.Present
			allKnown = allKnown && s.Evaluable
		}
		switch r.Verdict {
		case rules.NoIncident:
			if present || !allKnown {
				t.Fatalf("no-incident with present=%v allKnown=%v", present, allKnown)
			}
		case rules.Undetermined:
		default:
			if !present || r.Findings[0].Status != rules.Supported || rules.Verdict(r.Findings[0].ID) != r.Verdict {
				t.Fatalf("verdict %s not the top supported finding", r.Verdict)
			}
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
		_ = r.String()
	})
}
