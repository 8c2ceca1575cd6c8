package report_test

import (
	"fmt"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/report"
	"github.com/whyslow/whyslow/rules"
)

// The fleet's TTFT p95 over the incident and baseline windows, and one
// replica's, as diagnose.Diagnose fills them in a Report (the numbers are
// the hot-replica scenario's). Each lookup is a plain method: a
// gophernotes notebook can call it.
func ExampleReport_Quantile() {
	ttft := func(p95, n float64) []report.Signal {
		return []report.Signal{{ID: string(catalog.SignalTTFT), Kind: "histogram", Unit: "s",
			Incident: &report.Measure{Quantiles: []report.Quantile{{Q: 0.95, Value: rules.Number(p95), Count: rules.Number(n)}}}}}
	}
	rep := &report.Report{Signals: report.Signals{
		Fleet:    ttft(3.02, 57380),
		Replicas: map[string][]report.Signal{"vllm-0": ttft(4.86, 17030), "vllm-1": ttft(0.202, 5760)},
	}}
	rep.Signals.Fleet[0].Baseline = &report.Measure{Quantiles: []report.Quantile{{Q: 0.95, Value: 0.202, Count: 57000}}}

	if q, ok := rep.Quantile(catalog.SignalTTFT, 0.95); ok {
		fmt.Printf("fleet TTFT p95 %.2fs over %.0f requests\n", float64(q.Value), float64(q.Count))
	}
	if q, ok := rep.BaselineQuantile(catalog.SignalTTFT, 0.95); ok {
		fmt.Printf("baseline %.3fs\n", float64(q.Value))
	}
	if q, ok := rep.ReplicaQuantile("vllm-0", catalog.SignalTTFT, 0.95); ok {
		fmt.Printf("vllm-0 %.2fs\n", float64(q.Value))
	}
	_, ok := rep.Quantile(catalog.SignalTTFT, 0.5)
	fmt.Println("p50 present:", ok)
	// Output:
	// fleet TTFT p95 3.02s over 57380 requests
	// baseline 0.202s
	// vllm-0 4.86s
	// p50 present: false
}
