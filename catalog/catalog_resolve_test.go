package catalog_test

import (
	"errors"
	"math"
	"sort"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/snapshot"
)

// Hand-built evidence: one sample per series at t=0.

func gaugeFam(name string, lbls ...string) *snapshot.Family {
	return &snapshot.Family{Name: name, Type: model.MetricTypeGauge, Series: []*snapshot.Series{
		{Name: name, Labels: labels.FromStrings(lbls...), T: []int64{0}, V: []float64{1}},
	}}
}

func counterFam(name string, lbls ...string) *snapshot.Family {
	f := gaugeFam(name, lbls...)
	f.Type = model.MetricTypeCounter
	return f
}

func histFam(name string, bounds []float64, lbls ...string) *snapshot.Family {
	b := append(append([]float64(nil), bounds...), math.Inf(1))
	counts := make([]float64, len(b))
	return &snapshot.Family{Name: name, Type: model.MetricTypeHistogram, Histograms: []*snapshot.HistogramSeries{
		{Labels: labels.FromStrings(lbls...), Bounds: b, T: []int64{0}, Counts: counts, Sum: []float64{0}, Count: []float64{0}},
	}}
}

func target(name string, fams ...*snapshot.Family) *snapshot.Target {
	t := &snapshot.Target{Name: name, Families: map[string]*snapshot.Family{}}
	for _, f := range fams {
		t.Families[f.Name] = f
	}
	return t
}

func evidence(targets ...*snapshot.Target) *snapshot.Evidence {
	sort.Slice(targets, func(i, j int) bool { return targets[i].Name < targets[j].Name })
	return &snapshot.Evidence{Targets: targets}
}

// v10Pod is a V1 pod of the 0.10 era: both KV usage names, the old per-step
// histogram, no per-request TPOT.
func v10Pod(name string) *snapshot.Target {
	l := []string{"engine", "0", "model_name", "m"}
	return target(name,
		gaugeFam("vllm:kv_cache_usage_perc", l...),
		gaugeFam("vllm:gpu_cache_usage_perc", l...),
		gaugeFam("vllm:num_requests_waiting", l...),
		histFam("vllm:time_per_output_token_seconds", []float64{0.01, 0.1}, l...),
		histFam("vllm:request_decode_time_seconds", []float64{1, 10}, l...),
		histFam("vllm:request_generation_tokens", []float64{1, 10}, l...),
		gaugeFam("vllm:cache_config_info", "block_size", "16", "engine", "0", "gpu_memory_utilization", "0.9"),
	)
}

// v0Pod is an old V0 pod: no engine label, no _created, CPU swap gauges.
func v0Pod(name string) *snapshot.Target {
	l := []string{"model_name", "m"}
	return target(name,
		gaugeFam("vllm:gpu_cache_usage_perc", l...),
		gaugeFam("vllm:num_requests_swapped", l...),
		gaugeFam("vllm:num_requests_waiting", l...),
		histFam("vllm:time_per_output_token_seconds", []float64{0.01, 0.1}, l...),
		gaugeFam("vllm:cache_config_info", "block_size", "16", "gpu_memory_utilization", "0.9"),
	)
}

func match(t *testing.T, tr catalog.TargetResolution, id catalog.SignalID) catalog.Match {
	t.Helper()
	m, ok := tr.Match(id)
	require.True(t, ok, "catalog has %s", id)
	return m
}

func TestResolveV1Target(t *testing.T) {
	res := catalog.Default().Resolve(evidence(v10Pod("pod-a")))
	require.Len(t, res.Targets, 1)
	tr := res.Targets[0]
	assert.Equal(t, "pod-a", tr.Target)
	assert.Equal(t, catalog.EngineV1, tr.Engine)
	assert.Equal(t, "0.9.2–0.10.x (V1)", tr.Versions.String())
	assert.Empty(t, tr.Warnings)

	kv := match(t, tr, catalog.SignalKVUsage)
	assert.Equal(t, "vllm:kv_cache_usage_perc", kv.Metric)
	assert.Equal(t, []string{"vllm:gpu_cache_usage_perc"}, kv.Shadowed)
	assert.Same(t, tr.Matches[0].Family, tr.Matches[0].Family)

	itl := match(t, tr, catalog.SignalITL)
	assert.Equal(t, "vllm:time_per_output_token_seconds", itl.Metric, "old per-step name is ITL")
	tpot := match(t, tr, catalog.SignalTPOT)
	assert.False(t, tpot.Found(), "no per-request TPOT before 0.11: cannot evaluate")
	assert.Empty(t, tpot.Metric)

	assert.Contains(t, res.Missing(), catalog.SignalTPOT)
	assert.NotContains(t, res.Missing(), catalog.SignalITL)
	assert.Contains(t, res.String(), "inputs on 1/1", "the TPOT fallback's inputs are there")
}

func TestResolveV0Target(t *testing.T) {
	tr := catalog.Default().ResolveTarget(v0Pod("old"))
	assert.Equal(t, catalog.EngineV0, tr.Engine)
	assert.Equal(t, "0.4–0.8.x (V0)", tr.Versions.String())
	assert.Equal(t, "vllm:gpu_cache_usage_perc", match(t, tr, catalog.SignalKVUsage).Metric)
	assert.Equal(t, "vllm:num_requests_swapped", match(t, tr, catalog.SignalSwapped).Metric)
}

func TestResolveWeakV0(t *testing.T) {
	// Names common to both engines, no engine label, no _created: the
	// consistent range keeps both engines, the likely one says V0.
	tr := catalog.Default().ResolveTarget(target("p",
		gaugeFam("vllm:num_requests_waiting", "model_name", "m"),
		counterFam("vllm:num_preemptions_total", "model_name", "m")))
	assert.Equal(t, catalog.EngineUnknown, tr.Versions.Engine)
	assert.Equal(t, catalog.EngineV0, tr.Likely.Engine)
	assert.Equal(t, catalog.EngineV0, tr.Engine)
}

func TestResolveCreatedIsV1(t *testing.T) {
	// Text format: X_created gauge families.
	tr := catalog.Default().ResolveTarget(target("p",
		counterFam("vllm:num_preemptions_total", "model_name", "m"),
		gaugeFam("vllm:num_preemptions_created", "model_name", "m")))
	assert.Equal(t, catalog.EngineV1, tr.Engine)
	assert.Equal(t, ">= 0.8 (V1)", tr.Versions.String())

	// OpenMetrics: start timestamps on the counter's samples.
	f := counterFam("vllm:num_preemptions_total", "model_name", "m")
	f.Series[0].StartT = []int64{0}
	tr = catalog.Default().ResolveTarget(target("p", f))
	assert.Equal(t, catalog.EngineV1, tr.Engine)
}

func TestResolveBucketLayouts(t *testing.T) {
	// V0 e2e histogram with the old bucket list: <= 0.6.3.
	tr := catalog.Default().ResolveTarget(target("p",
		gaugeFam("vllm:num_requests_swapped", "model_name", "m"),
		histFam("vllm:e2e_request_latency_seconds", []float64{1.0, 2.5, 5.0, 10, 15, 20, 30, 40, 50, 60}, "model_name", "m")))
	assert.Equal(t, "0.3–0.6.3 (V0)", tr.Versions.String())

	// A layout the history does not know is no clue.
	tr = catalog.Default().ResolveTarget(target("p",
		gaugeFam("vllm:num_requests_swapped", "model_name", "m"),
		histFam("vllm:e2e_request_latency_seconds", []float64{1, 2, 3}, "model_name", "m")))
	assert.Equal(t, "0.3–0.8.x (V0)", tr.Versions.String())
}

func TestResolveConflictingClues(t *testing.T) {
	// An engine label (V1, documented) next to a V0-only gauge (an edited
	// composite capture): the label wins, the gauge's clue is skipped and
	// warnings say why.
	tr := catalog.Default().ResolveTarget(target("p",
		gaugeFam("vllm:num_requests_waiting", "engine", "0"),
		gaugeFam("vllm:num_requests_swapped", "engine", "0")))
	assert.Equal(t, catalog.EngineV1, tr.Engine)
	require.Len(t, tr.Warnings, 2)
	assert.ErrorIs(t, tr.Warnings[0], catalog.ErrConflictingClues)
	assert.Contains(t, tr.Warnings[0].Error(), "V0-only names (vllm:num_requests_swapped) next to V1 signs")
	assert.Contains(t, tr.Warnings[1].Error(), "vllm:num_requests_swapped: 0.3–0.8.x (V0) [approximate] (skipped: contradicts)")

	// Documented ranges that do not meet (a name removed in 0.12 next to
	// one added in 0.11 is fine; one removed after 0.10 is not): the clue
	// applied later is skipped, not the result emptied.
	tr = catalog.Default().ResolveTarget(target("p",
		gaugeFam("vllm:gpu_cache_usage_perc", "engine", "0"),                               // V1 0.8–0.10.x
		histFam("vllm:request_time_per_output_token_seconds", []float64{1}, "engine", "0"), // >= 0.11
	))
	assert.False(t, tr.Versions.Empty())
	assert.Equal(t, "0.8–0.10.x (V1)", tr.Versions.String())
	skipped := 0
	for _, c := range tr.Clues {
		if c.Skipped {
			skipped++
			assert.Contains(t, c.String(), "skipped")
		}
	}
	assert.Equal(t, 1, skipped)
	require.Len(t, tr.Warnings, 1)
	assert.ErrorIs(t, tr.Warnings[0], catalog.ErrConflictingClues)
}

func TestResolveUnexpectedType(t *testing.T) {
	tr := catalog.Default().ResolveTarget(target("p",
		gaugeFam("vllm:time_to_first_token_seconds", "engine", "0")))
	assert.False(t, match(t, tr, catalog.SignalTTFT).Found())
	require.NotEmpty(t, tr.Warnings)
	assert.ErrorIs(t, tr.Warnings[0], catalog.ErrUnexpectedType)
	assert.Contains(t, tr.Warnings[0].Error(), "ttft needs a histogram")
}

func TestResolveNotVLLMAndGateway(t *testing.T) {
	cat := catalog.Default()
	require.NoError(t, cat.Alias(catalog.SignalClientTTFT, "gateway_ttft_seconds"))
	res := cat.Resolve(evidence(
		v10Pod("pod-a"),
		target("gateway", histFam("gateway_ttft_seconds", []float64{0.1, 1})),
		target("sglang-0", gaugeFam("sglang:num_queue_reqs")),
	))
	require.Len(t, res.Targets, 3)
	gw, sg := res.Targets[0], res.Targets[2]
	assert.Equal(t, "gateway", gw.Target)
	assert.Equal(t, catalog.EngineNotVLLM, gw.Engine)
	assert.Equal(t, "gateway_ttft_seconds", match(t, gw, catalog.SignalClientTTFT).Metric)
	assert.Equal(t, catalog.EngineNotVLLM, sg.Engine)
	require.NotEmpty(t, sg.Warnings)
	assert.ErrorIs(t, sg.Warnings[0], catalog.ErrNotVLLM)
	assert.Contains(t, sg.Warnings[0].Error(), "prefixes seen: sglang:")
	assert.Equal(t, "0.9.2–0.10.x (V1)", res.Versions.String(), "non-vLLM targets do not widen the fleet's range")
	for _, w := range res.Warnings {
		assert.NotErrorIs(t, w, catalog.ErrPartialSignal, "a gateway lacking vLLM signals is not partial coverage: %v", w)
	}
	assert.NotContains(t, res.Missing(), catalog.SignalClientTTFT)
}

func TestResolveFleetSkewAndDrift(t *testing.T) {
	b := v10Pod("pod-b")
	b.Families["vllm:cache_config_info"] = gaugeFam("vllm:cache_config_info",
		"block_size", "16", "engine", "0", "gpu_memory_utilization", "0.95", "kv_cache_size_tokens", "1000")
	res := catalog.Default().Resolve(evidence(v10Pod("pod-a"), b, v0Pod("pod-old")))

	var skew, partial, drift []error
	for _, w := range res.Warnings {
		switch {
		case errors.Is(w, catalog.ErrVersionSkew):
			skew = append(skew, w)
		case errors.Is(w, catalog.ErrPartialSignal):
			partial = append(partial, w)
		case errors.Is(w, catalog.ErrConfigDrift):
			drift = append(drift, w)
		}
	}
	require.NotEmpty(t, skew)
	assert.Contains(t, skew[0].Error(), "engines differ: V0 on pod-old; V1 on pod-a, pod-b")
	assert.Contains(t, joinErrs(skew), "kv_usage comes from vllm:gpu_cache_usage_perc on pod-old; vllm:kv_cache_usage_perc on pod-a, pod-b")
	assert.Contains(t, joinErrs(partial), "decode_time missing on pod-old")

	// gpu_memory_utilization drifts; block_size does not; a label only
	// one pod has (a newer version's field) is not drift.
	require.Len(t, res.Drift, 1)
	d := res.Drift[0]
	assert.Equal(t, catalog.SignalCacheConfig, d.Signal)
	assert.Equal(t, "gpu_memory_utilization", d.Label)
	assert.Equal(t, []catalog.DriftValue{
		{Value: "0.9", Targets: []string{"pod-a", "pod-old"}},
		{Value: "0.95", Targets: []string{"pod-b"}},
	}, d.Values)
	require.Len(t, drift, 1)
	assert.Contains(t, drift[0].Error(), `gpu_memory_utilization: "0.9" (pod-a, pod-old), "0.95" (pod-b)`)
}

func joinErrs(errs []error) string {
	return errors.Join(errs...).Error()
}

func TestResolveVersionRangesDoNotOverlap(t *testing.T) {
	newer := target("new",
		gaugeFam("vllm:num_requests_waiting", "engine", "0"),
		histFam("vllm:request_time_per_output_token_seconds", []float64{1}, "engine", "0")) // >= 0.11
	res := catalog.Default().Resolve(evidence(v10Pod("old"), newer))
	require.NotEmpty(t, res.Warnings)
	assert.Contains(t, joinErrs(res.Warnings), "version skew: version ranges do not overlap: new >= 0.11 (V1); old 0.9.2–0.10.x (V1)")
	assert.Equal(t, ">= 0.9.2 (V1)", res.Versions.String())
}

func TestResolveRayPrefix(t *testing.T) {
	pod := target("ray-0",
		gaugeFam("ray_vllm:num_requests_waiting", "engine", "0", "ReplicaId", "r1"),
		gaugeFam("ray_vllm:kv_cache_usage_perc", "engine", "0"),
		histFam("ray_vllm:request_time_per_output_token_seconds", []float64{1}, "engine", "0"))

	// Ray Serve's prefix is built in: no WithPrefix, no warning.
	plain := catalog.Default().ResolveTarget(pod)
	withPrefix, err := catalog.Default().WithPrefix("ray_vllm:")
	require.NoError(t, err)
	for name, tr := range map[string]catalog.TargetResolution{"built in": plain, "WithPrefix": withPrefix.ResolveTarget(pod)} {
		assert.Equal(t, catalog.EngineV1, tr.Engine, name)
		assert.Equal(t, ">= 0.11 (V1)", tr.Versions.String(), name)
		assert.Equal(t, "ray_vllm:num_requests_waiting", match(t, tr, catalog.SignalWaiting).Metric, name)
		assert.Equal(t, "ray_vllm:request_time_per_output_token_seconds", match(t, tr, catalog.SignalTPOT).Metric, name)
		assert.Empty(t, tr.Warnings, name)
	}
	res := catalog.Default().Resolve(evidence(pod))
	require.NotEmpty(t, res.Signals)
	require.Equal(t, catalog.SignalTTFT, res.Signals[0].ID)
	assert.Contains(t, res.Signals[0].Metrics(), "ray_vllm:time_to_first_token_seconds", "the fleet's signals list the prefixed names it resolved")
	ttft, _ := catalog.Default().Signal(catalog.SignalTTFT)
	assert.NotContains(t, ttft.Metrics(), "ray_vllm:time_to_first_token_seconds", "evidence without the prefix keeps the catalog as it is")

	// Another re-export prefix still needs WithPrefix.
	other := target("other-0", gaugeFam("myorg_vllm:num_requests_waiting", "engine", "0"))
	assert.Equal(t, catalog.EngineNotVLLM, catalog.Default().ResolveTarget(other).Engine, "without the prefix rule nothing is vLLM")
	cat, err := catalog.Default().WithPrefix("myorg_vllm:")
	require.NoError(t, err)
	assert.Equal(t, "myorg_vllm:num_requests_waiting", match(t, cat.ResolveTarget(other), catalog.SignalWaiting).Metric)
}

func TestResolveCompanionExporterIsNotNotVLLM(t *testing.T) {
	res := catalog.Default().Resolve(evidence(
		v10Pod("pod-a"),
		target("dcgm-0", gaugeFam("DCGM_FI_DEV_GPU_UTIL", "gpu", "0"), gaugeFam("process_start_time_seconds")),
		target("node-0", gaugeFam("node_load1")),
		target("sglang-0", gaugeFam("sglang:num_queue_reqs"), gaugeFam("process_start_time_seconds")),
	))
	require.Len(t, res.Targets, 4)
	byName := map[string]catalog.TargetResolution{}
	for _, tr := range res.Targets {
		byName[tr.Target] = tr
	}
	for _, name := range []string{"dcgm-0", "node-0"} {
		assert.Equal(t, catalog.EngineNotVLLM, byName[name].Engine, name)
		for _, w := range byName[name].Warnings {
			assert.NotErrorIs(t, w, catalog.ErrNotVLLM, "%s is a companion exporter", name)
		}
	}
	require.NotEmpty(t, byName["sglang-0"].Warnings)
	assert.ErrorIs(t, byName["sglang-0"].Warnings[0], catalog.ErrNotVLLM, "one process_ family does not make a companion")
	assert.True(t, match(t, byName["dcgm-0"], catalog.SignalGPUUtil).Found(), "the companion's signals still resolve")
}

func TestResolveEmptyFamilyAndNil(t *testing.T) {
	f := &snapshot.Family{Name: "http_requests_total", Type: model.MetricTypeCounter}
	tr := catalog.Default().ResolveTarget(target("p", gaugeFam("vllm:num_requests_waiting", "engine", "0"), f))
	m := match(t, tr, catalog.SignalHTTPRequests)
	assert.True(t, m.Found())
	assert.True(t, m.Empty())
	assert.False(t, match(t, tr, catalog.SignalWaiting).Empty())
	assert.False(t, match(t, tr, catalog.SignalTTFT).Empty(), "a missing family is not empty")

	res := catalog.Default().Resolve(nil)
	assert.Empty(t, res.Targets)
	assert.NotEmpty(t, res.Signals)
	assert.Contains(t, res.String(), "0 target(s)")

	_, ok := tr.Match("nope")
	assert.False(t, ok)
}

func TestResolveDoesNotModifyEvidence(t *testing.T) {
	ev := evidence(v10Pod("a"), v0Pod("b"))
	before := ev.Targets[0].Families["vllm:cache_config_info"].Series[0].Labels.String()
	n := len(ev.Targets[0].Families)
	_ = catalog.Default().Resolve(ev).String()
	assert.Equal(t, before, ev.Targets[0].Families["vllm:cache_config_info"].Series[0].Labels.String())
	assert.Len(t, ev.Targets[0].Families, n)
}

func TestTargetResolutionString(t *testing.T) {
	tr := catalog.Default().ResolveTarget(v10Pod("pod-a"))
	s := tr.String()
	assert.Contains(t, s, "target pod-a: engine V1, consistent with 0.9.2–0.10.x (V1)")
	assert.Contains(t, s, "  clue   engine label: any (V1)\n")
	assert.Contains(t, s, "  clue   vllm:kv_cache_usage_perc: >= 0.9.2 (V1)\n")
	assert.Contains(t, s, "  signal kv_usage: vllm:kv_cache_usage_perc\n")
	assert.Contains(t, s, "  signal tpot: cannot evaluate\n")

	absent := catalog.Clue{Evidence: "vllm:x", Absent: true, Versions: catalog.Since(catalog.EngineV1, catalog.Version{Minor: 11}), Confidence: catalog.Approximate}
	assert.Equal(t, "absent vllm:x: not >= 0.11 (V1) [approximate]", absent.String())

	e := catalog.History()[0]
	assert.Equal(t, "vllm:num_requests_running 0.3–0.10.x (V0)", e.String())
	for _, e := range catalog.History() {
		if e.Bounds != nil && e.Confidence == catalog.Approximate {
			assert.Contains(t, e.String(), " buckets ")
			assert.Contains(t, e.String(), "[approximate]")
			break
		}
	}
}

func TestDriftComparesNumbersAsNumbers(t *testing.T) {
	info := func(pod, gmu string) *snapshot.Target {
		return &snapshot.Target{Name: pod, Scrapes: []snapshot.Scrape{{}}, Families: map[string]*snapshot.Family{
			"vllm:cache_config_info":    gaugeFam("vllm:cache_config_info", "gpu_memory_utilization", gmu, "block_size", "16"),
			"vllm:num_requests_waiting": gaugeFam("vllm:num_requests_waiting", "model_name", "m"),
		}}
	}
	same := &snapshot.Evidence{Targets: []*snapshot.Target{info("a", "0.9"), info("b", "0.90")}}
	assert.Empty(t, catalog.Default().Resolve(same).Drift, "0.9 and 0.90 are one setting")
	differ := &snapshot.Evidence{Targets: []*snapshot.Target{info("a", "0.9"), info("b", "0.95")}}
	d := catalog.Default().Resolve(differ).Drift
	require.Len(t, d, 1)
	assert.Equal(t, "gpu_memory_utilization", d[0].Label)
}
