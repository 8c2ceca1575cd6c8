package snapshot_test

import (
	"fmt"

	"github.com/whyslow/whyslow/snapshot"
)

func ExampleParseDump() {
	dump := `# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="qwen"} 12
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_sum{engine="0",model_name="qwen"} 41.5
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="qwen"} 20
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="qwen"} 30
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="qwen"} 40
vllm:time_to_first_token_seconds_count{engine="0",model_name="qwen"} 40
`
	e, err := snapshot.ParseDump([]byte(dump), "vllm-0/2026-09-22T10-00-15Z.prom", snapshot.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := e.Target("vllm-0")
	fmt.Println(t.Name, t.Scrapes[0].Time, "from", t.Scrapes[0].TimeFrom)
	fmt.Println(t.Family("vllm:num_requests_waiting").Series[0].V)
	ttft := t.Family("vllm:time_to_first_token_seconds").Histograms[0]
	fmt.Println(ttft.Labels, ttft.At(0))
	fmt.Println(len(e.Problems), "problems")
	// Output:
	// vllm-0 2026-09-22 10:00:15 +0000 UTC from file name
	// [12]
	// {engine="0", model_name="qwen"} n=40 sum=41.5 mean=1.038 {0.5:20 1:30 +Inf:40}
	// 0 problems
}

func ExampleEvidence_Partial() {
	dump := "vllm:num_requests_running 3\nvllm:num_requests_waiting{model_name=\"qwen\" 7\n"
	e, _ := snapshot.ParseDump([]byte(dump), "vllm-0_20260922T100015Z.prom", snapshot.Options{})
	for _, p := range e.Problems {
		fmt.Println(p.String())
	}
	fmt.Println("partial:", e.Partial())
	// Output:
	// error: vllm-0_20260922T100015Z.prom:2: expected label name, got "7" ("INVALID") while parsing: "vllm:num_requests_waiting{model_name=\"qwen\" 7"
	// partial: true
}

func ExampleEvidence_LabelValues() {
	ev, err := snapshot.ParseDump([]byte(`# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="qwen"} 1
vllm:num_requests_waiting{model_name=""} 1
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{model_name="llama",le="+Inf"} 2
vllm:e2e_request_latency_seconds_sum{model_name="llama"} 1
vllm:e2e_request_latency_seconds_count{model_name="llama"} 2
`), "pod-0", snapshot.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Series and histograms count; an empty value is no value.
	fmt.Println(ev.LabelValues("model_name"), len(ev.LabelValues("engine")))
	// Output:
	// [llama qwen] 0
}
