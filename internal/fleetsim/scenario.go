package fleetsim

import (
	"fmt"
	"slices"
	"time"
)

// IncidentStart is when the incident of every named scenario begins: the
// first half of the 60-minute run is the baseline.
const IncidentStart = 30 * time.Minute

// ScenarioSpec is a named, ready-made fleet. Every scenario runs 8 pods for
// 60 minutes with 15 s scrapes; the first half is the baseline and the
// incident, if any, starts at IncidentStart. The incident is produced by
// the physics knobs (arrival rate, request shape, prefixes, routing, KV
// capacity, CPU overhead), never by writing metric values.
type ScenarioSpec struct {
	Name        string
	Description string
	// Expect is the diagnosis the scenario is built to produce, as a
	// hypothesis id of the diagnose package ("queue-sustained",
	// "queue-burst", "prefill-long-prompts", "prefix-cache-loss",
	// "decode-pressure", "kv-preemption", "outside-gpu",
	// "replica-hotspot") or "no-incident".
	Expect string
	Config Config
}

// baseRate is the baseline fleet arrival rate of the scenarios, in
// requests per second: about 40% of the default pods' capacity.
const baseRate = 32

// twoPhases returns a workload whose second phase, from IncidentStart,
// is the first one changed by incident.
func twoPhases(base Phase, incident func(*Phase)) Workload {
	inc := base
	inc.Start = IncidentStart
	incident(&inc)
	return Workload{Phases: []Phase{base, inc}}
}

func basePhase() Phase {
	p := DefaultPhase
	p.Rate = baseRate
	return p
}

// scenarios builds the catalogue. Seeds are fixed per scenario so that
// tests of other packages see the same fleets.
func scenarios() []ScenarioSpec {
	mk := func(name, desc, expect string, seed uint64, c Config) ScenarioSpec {
		c.Seed = seed
		c.GPUExporter = DCGMPercent
		if len(c.Workload.Phases) == 0 {
			c.Workload.Phases = []Phase{basePhase()}
		}
		return ScenarioSpec{Name: name, Description: desc, Expect: expect, Config: c}
	}
	var specs []ScenarioSpec

	specs = append(specs, mk("healthy",
		"steady load at ~40% of capacity; nothing changes", "no-incident", 101, Config{}))

	specs = append(specs, mk("sustained-overload",
		"arrival rate rises to ~115% of capacity: running pins at max_num_seqs, waiting accumulates, TTFT grows",
		"queue-sustained", 102, Config{Workload: twoPhases(basePhase(), func(p *Phase) { p.Rate = 88 })}))

	burst := mk("burst",
		"four 15-20 s bursts of ~6x the baseline rate: waiting spikes, then drains within a minute or two",
		"queue-burst", 103, Config{})
	burst.Config.Workload.Bursts = []Burst{
		{At: 33 * time.Minute, Length: 15 * time.Second, Rate: 180},
		{At: 40*time.Minute + 30*time.Second, Length: 20 * time.Second, Rate: 160},
		{At: 47 * time.Minute, Length: 15 * time.Second, Rate: 200},
		{At: 54*time.Minute + 15*time.Second, Length: 20 * time.Second, Rate: 160},
	}
	specs = append(specs, burst)

	specs = append(specs, mk("long-prompts",
		"12% of prompts become ~7k-token documents: prompt p50 flat, p95/p99 and prefill time up, queue short",
		"prefill-long-prompts", 104, Config{Workload: twoPhases(basePhase(), func(p *Phase) {
			p.Prompt.TailWeight, p.Prompt.TailMedian, p.Prompt.TailSigma = 0.12, 7000, 0.25
		})}))

	pfx := basePhase()
	pfx.PrefixShare, pfx.PrefixGroups, pfx.PrefixLen = 0.9, 6, 1536
	specs = append(specs, mk("prefix-cache-loss",
		"shared system prompts become per-request (a template change): prefix-cache hit ratio collapses, prefill and TTFT up, prompt lengths unchanged",
		"prefix-cache-loss", 105, Config{Workload: twoPhases(pfx, func(p *Phase) {
			p.PrefixGroups, p.PrefixSkew = 200000, 1
		})}))

	specs = append(specs, mk("decode-pressure",
		"outputs become 3x longer: running sequences and TPOT/ITL rise together, TTFT stays near normal, no queue",
		"decode-pressure", 106, Config{Workload: twoPhases(basePhase(), func(p *Phase) {
			p.Output.Median = 480
		})}))

	kvEng := DefaultEngine.WithGPUMemoryUtilization(0.56)
	specs = append(specs, mk("kv-preemption",
		"KV cache sized small (gpu_memory_utilization 0.56); longer contexts arrive: KV usage ~1 and preemptions by recompute",
		"kv-preemption", 107, Config{Engine: kvEng, Workload: twoPhases(basePhase(), func(p *Phase) {
			p.Prompt.Median, p.Output.Median = 900, 250
		})}))

	out := mk("outside-gpu",
		"the API server/scheduler CPU is starved (20 ms per step + 1.2 ms per sequence): GPU idles between steps, throughput drops, queue grows",
		"outside-gpu", 108, Config{})
	out.Config.Workload.Slowdowns = []Slowdown{{From: IncidentStart, To: 2 * time.Hour, CPUPerStep: 20 * time.Millisecond, CPUPerSeq: 1200 * time.Microsecond}}
	specs = append(specs, out)

	specs = append(specs, mk("hot-replica",
		"routing sends 3x its share to vllm-0 (affinity misconfiguration): that replica queues, the others are fine",
		"replica-hotspot", 109, Config{Workload: twoPhases(basePhase(), func(p *Phase) {
			p.Weights = []float64{3, 1, 1, 1, 1, 1, 1, 1}
		})}))

	hk := basePhase()
	hk.Rate = 48
	hk.Prompt = Dist{Median: 150, Sigma: 0.4, Min: 16}
	hk.Output = Dist{Median: 120, Sigma: 0.4, Min: 1}
	hk.PrefixShare, hk.PrefixGroups, hk.PrefixLen, hk.PrefixSkew = 0.97, 2, 14000, 1
	specs = append(specs, mk("high-kv-healthy",
		"long shared documents (14k tokens) stay resident in a small KV cache (gpu_memory_utilization 0.62): usage rises from ~0.5 to ~0.88 when two more documents become hot, with no preemption and SLOs met",
		"no-incident", 110, Config{Engine: DefaultEngine.WithGPUMemoryUtilization(0.62), Workload: twoPhases(hk, func(p *Phase) {
			p.PrefixGroups = 4
		})}))

	low := basePhase()
	low.Rate = 0.4
	specs = append(specs, mk("low-traffic",
		"0.4 requests/s over 8 pods: GPU mostly idle, no queue, SLOs met (plan a capacity test, not a fix)",
		"no-incident", 111, Config{Workload: Workload{Phases: []Phase{low}}}))

	rs := mk("restart",
		"healthy load; vllm-2 restarts at 40 min (60 s down): counters reset, in-flight requests lost",
		"no-incident", 112, Config{Pods: make([]PodConfig, 8)})
	rs.Config.Pods[2].Restarts = []Restart{{At: 40 * time.Minute, Downtime: time.Minute}}
	specs = append(specs, rs)

	mv := mk("mixed-versions",
		"vLLM 0.11 (one pod with 2 data-parallel engines), 0.9-like and V0 pods side by side; sustained overload from 30 min",
		"queue-sustained", 113, Config{Pods: []PodConfig{
			{}, {}, {}, {Weight: 2, DataParallel: 2},
			{Version: VersionV1Early}, {Version: VersionV1Early}, {Version: VersionV1Early},
			{Version: VersionV0},
		}, Workload: twoPhases(basePhase(), func(p *Phase) { p.Rate = 99 })})
	mv.Config.Workload.Phases[0].Rate = 36
	specs = append(specs, mv)
	return specs
}

// Scenarios returns every named scenario, in a stable order.
func Scenarios() []ScenarioSpec { return scenarios() }

// ScenarioNames returns the names of the scenarios, in the order of
// Scenarios.
func ScenarioNames() []string {
	var names []string
	for _, s := range scenarios() {
		names = append(names, s.Name)
	}
	return names
}

// LookupScenario returns the scenario with the given name.
func LookupScenario(name string) (ScenarioSpec, bool) {
	return byName(scenarios(), name, func(s ScenarioSpec) string { return s.Name })
}

// byName returns the item of items whose name (as name reads it) is want.
func byName[T any](items []T, want string, name func(T) string) (T, bool) {
	i := slices.IndexFunc(items, func(x T) bool { return name(x) == want })
	if i < 0 {
		var zero T
		return zero, false
	}
	return items[i], true
}

// Scenario returns the configuration of the named scenario. It panics if
// the name is unknown (see ScenarioNames), like regexp.MustCompile: names
// are constants in tests.
func Scenario(name string) Config {
	s, ok := LookupScenario(name)
	if !ok {
		panic(fmt.Sprintf("fleetsim: unknown scenario %q (known: %v)", name, ScenarioNames()))
	}
	return s.Config
}

// Replay returns a copy of cfg with change applied to the engine settings
// of every pod (Config.Engine and each PodConfig.Engine), nothing else
// changed. Because the request trace depends only on TraceSeed, the
// workload, routing and duration, Run(Replay(cfg, change)) replays exactly
// the requests of Run(cfg) under the new setting: the controlled,
// one-variable experiment. To repeat an experiment, vary
// TraceSeed (new request sample) and/or Seed (engine noise) in both arms.
func Replay(cfg Config, change func(*EngineConfig)) Config {
	out := cfg
	e := cfg.Engine.withDefaults()
	change(&e)
	out.Engine = e
	out.Pods = slices.Clone(cfg.Pods)
	for i := range out.Pods {
		if pe := out.Pods[i].Engine; pe != nil {
			ne := pe.withDefaults()
			change(&ne)
			out.Pods[i].Engine = &ne
		}
	}
	if out.TraceSeed == 0 {
		out.TraceSeed = out.Seed
	}
	return out
}
