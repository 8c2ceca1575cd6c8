package catalog_test

import (
	"fmt"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/snapshot"
)

func ExampleDefault() {
	cat := catalog.Default()
	for _, id := range []catalog.SignalID{catalog.SignalTPOT, catalog.SignalITL, catalog.SignalKVUsage} {
		s, _ := cat.Signal(id)
		fmt.Println(s)
		for _, c := range s.Candidates {
			fmt.Printf("  %s %v\n", c.Metric, c.Versions)
		}
	}
	// Output:
	// tpot (histogram, seconds)
	//   vllm:request_time_per_output_token_seconds [>= 0.11 (V1)]
	// itl (histogram, seconds)
	//   vllm:inter_token_latency_seconds [>= 0.10.2 (V1)]
	//   vllm:time_per_output_token_seconds [0.3–0.10.x (V0) 0.7–0.11.x (V1)]
	// kv_usage (gauge, ratio)
	//   vllm:kv_cache_usage_perc [>= 0.9.2 (V1)]
	//   vllm:gpu_cache_usage_perc [0.3–0.10.x (V0) 0.8–0.10.x (V1)]
}

func ExampleCatalog_Alias() {
	cat := catalog.Default()
	// A gateway's client-side TTFT histogram, in milliseconds.
	if err := cat.Alias(catalog.SignalClientTTFT, "gateway_first_token_milliseconds"); err != nil {
		fmt.Println(err)
	}
	s, _ := cat.Signal(catalog.SignalClientTTFT)
	fmt.Println(s.Metrics(), s.Candidates[0].ScaleFor(250))

	// A typo in the signal id.
	fmt.Println(cat.Alias("gpu_utilization", "my_gpu_busy_ratio") != nil)
	// Output:
	// [gateway_first_token_milliseconds inference_objective_request_ttft_seconds] 0.001
	// true
}

func ExampleCatalog_WithPrefix() {
	cat, err := catalog.Default().WithPrefix("ray_vllm:")
	if err != nil {
		fmt.Println(err)
		return
	}
	s, _ := cat.Signal(catalog.SignalWaiting)
	fmt.Println(s.Metrics())
	// Output:
	// [vllm:num_requests_waiting ray_vllm:num_requests_waiting]
}

func ExampleCatalog_Resolve() {
	// One V1 pod (engine label) that still exposes the pre-0.11 per-step
	// histogram and both KV usage names.
	gauge := func(name string) *snapshot.Family {
		return &snapshot.Family{Name: name, Type: model.MetricTypeGauge, Series: []*snapshot.Series{
			{Name: name, Labels: labels.FromStrings("engine", "0"), T: []int64{0}, V: []float64{0.5}},
		}}
	}
	ev := &snapshot.Evidence{Targets: []*snapshot.Target{{
		Name: "vllm-0",
		Families: map[string]*snapshot.Family{
			"vllm:kv_cache_usage_perc":  gauge("vllm:kv_cache_usage_perc"),
			"vllm:gpu_cache_usage_perc": gauge("vllm:gpu_cache_usage_perc"),
		},
	}}}
	res := catalog.Default().Resolve(ev)
	tr := res.Targets[0]
	fmt.Println(tr.Engine, tr.Versions)
	kv, _ := tr.Match(catalog.SignalKVUsage)
	fmt.Println(kv.Metric, kv.Shadowed)
	tpot, _ := tr.Match(catalog.SignalTPOT)
	fmt.Println(tpot.Found())
	// Output:
	// V1 0.9.2–0.10.x (V1)
	// vllm:kv_cache_usage_perc [vllm:gpu_cache_usage_perc]
	// false
}

func ExampleMeanTPOTFromSums() {
	// Over a window: 120 s of decode time, 6,100 output tokens in 100
	// finished requests (6,000 decoded after each first token).
	fmt.Printf("%.3f s/token\n", catalog.MeanTPOTFromSums(120, 6100, 100))
	// Output:
	// 0.020 s/token
}

func ExampleVersionRange_String() {
	v1 := catalog.Since(catalog.EngineV1, catalog.Version{Minor: 11})
	old := catalog.Between(catalog.EngineV1, catalog.Version{Minor: 8}, catalog.Version{Minor: 10})
	fmt.Println(v1)
	fmt.Println(old)
	fmt.Println(old.Intersect(catalog.Since(catalog.EngineV1, catalog.Version{Minor: 9, Patch: 2})))
	fmt.Println(old.Intersect(v1))
	// Output:
	// >= 0.11 (V1)
	// 0.8–0.10.x (V1)
	// 0.9.2–0.10.x (V1)
	// none
}
