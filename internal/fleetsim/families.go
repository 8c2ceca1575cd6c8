package fleetsim

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// famBuilder assembles the families of one vLLM scrape.
type famBuilder struct {
	sc      *Scrape
	v       Version
	model   string
	start   float64 // process start, Unix seconds
	nextCr  float64 // next _created value
	fams    []family
	engines []label // per engine: the engine label (V1)
}

func (b *famBuilder) created() float64 {
	b.nextCr += 1.37e-5
	return b.nextCr
}

// engineLabels returns the labels of engine i's series plus extra, sorted.
func (b *famBuilder) engineLabels(i int, extra ...label) []label {
	ls := make([]label, 0, 3+len(extra))
	if b.v != VersionV0 {
		ls = append(ls, b.engines[i])
	}
	ls = append(ls, extra...)
	ls = append(ls, label{"model_name", b.model})
	// extra labels sort between engine and model_name for every vLLM
	// metric we emit (finished_reason, ...).
	return ls
}

func (b *famBuilder) add(f family) {
	f.created = f.created && b.v != VersionV0
	f.sumFirst = b.v == VersionV0
	b.fams = append(b.fams, f)
}

// perEngine adds a counter or gauge with one series per engine.
func (b *famBuilder) perEngine(name, help string, typ famType, val func(*engineSnap) float64) {
	f := family{name: name, help: help, typ: typ, created: typ == typeCounter}
	for i := range b.sc.snaps {
		f.series = append(f.series, series{labels: b.engineLabels(i), value: val(&b.sc.snaps[i]), created: b.created()})
	}
	b.add(f)
}

func (b *famBuilder) gauge(name, help string, val func(*engineSnap) float64) {
	b.perEngine(name, help, typeGauge, val)
}

func (b *famBuilder) counter(name, help string, val func(*engineStats) float64) {
	b.perEngine(name, help, typeCounter, func(s *engineSnap) float64 { return val(s.st) })
}

func (b *famBuilder) hist(name, help string, h int) {
	f := family{name: name, help: help, typ: typeHistogram, created: true}
	for i := range b.sc.snaps {
		st := b.sc.snaps[i].st
		f.series = append(f.series, series{
			labels: b.engineLabels(i), bounds: st.lay[h], counts: st.hist(h), sum: st.sums[h], created: b.created(),
		})
	}
	b.add(f)
}

// sum adds up a statistic over the engines of the pod (API-server level).
func (b *famBuilder) sum(val func(*engineStats) float64) float64 {
	t := 0.0
	for i := range b.sc.snaps {
		t += val(b.sc.snaps[i].st)
	}
	return t
}

// sumHist merges histogram h over the engines.
func (b *famBuilder) sumHist(h int) ([]uint64, float64) {
	var counts []uint64
	s := 0.0
	for i := range b.sc.snaps {
		st := b.sc.snaps[i].st
		c := st.hist(h)
		if counts == nil {
			counts = make([]uint64, len(c))
		}
		for k := range c {
			counts[k] += c[k]
		}
		s += st.sums[h]
	}
	return counts, s
}

// families returns the metric families of the vLLM /metrics page.
func (sc *Scrape) families() []family {
	p := sc.pod
	c := &p.fleet.Config
	start := float64(c.Start.Add(p.Starts[sc.proc]).UnixNano()) / 1e9
	b := &famBuilder{sc: sc, v: p.Version, model: c.ModelName, start: start, nextCr: start + 0.42}
	for i := range sc.snaps {
		b.engines = append(b.engines, label{"engine", strconv.Itoa(i)})
	}
	if b.v != VersionV0 {
		b.processFamilies()
	}
	switch b.v {
	case VersionV0:
		b.v0Families()
	default:
		b.v1Families()
		b.httpFamilies()
	}
	return b.fams
}

// processFamilies adds prometheus_client's default collectors (API-server
// process).
func (b *famBuilder) processFamilies() {
	done := b.sum(func(s *engineStats) float64 { return s.success[reasonStop] + s.success[reasonLength] })
	gen := func(vals ...float64) []series {
		out := make([]series, len(vals))
		for i, v := range vals {
			out[i] = series{labels: []label{{"generation", strconv.Itoa(i)}}, value: math.Round(v)}
		}
		return out
	}
	running := 0
	for i := range b.sc.snaps {
		running += b.sc.snaps[i].running
	}
	uptime := float64(b.sc.Offset-b.sc.pod.Starts[b.sc.proc]) / 1e9
	g0 := 9800 + 2.1*done
	b.fams = append(b.fams,
		family{name: "python_gc_objects_collected", help: "Objects collected during gc", typ: typeCounter,
			series: gen(g0, g0/7.3, g0/19)},
		family{name: "python_gc_objects_uncollectable", help: "Uncollectable objects found during GC", typ: typeCounter,
			series: gen(0, 0, 0)},
		family{name: "python_gc_collections", help: "Number of times this generation was collected", typ: typeCounter,
			series: gen(1500+0.3*done, 136+0.027*done, 9+0.002*done)},
		family{name: "python_info", help: "Python platform information", typ: typeGauge,
			series: []series{{labels: []label{{"implementation", "CPython"}, {"major", "3"}, {"minor", "12"}, {"patchlevel", "11"}, {"version", "3.12.11"}}, value: 1}}},
		family{name: "process_virtual_memory_bytes", help: "Virtual memory size in bytes.", typ: typeGauge,
			series: []series{{value: 1.35784448e+10 + 4096*math.Floor(uptime/60)}}},
		family{name: "process_resident_memory_bytes", help: "Resident memory size in bytes.", typ: typeGauge,
			series: []series{{value: 1.454759936e+09 + 4096*float64(running) + 512*math.Floor(done/100)}}},
		family{name: "process_start_time_seconds", help: "Start time of the process since unix epoch in seconds.", typ: typeGauge,
			series: []series{{value: math.Round(b.start*100) / 100}}},
		family{name: "process_cpu_seconds", help: "Total user and system CPU time spent in seconds.", typ: typeCounter,
			series: []series{{value: math.Round((11.3+b.sum(func(s *engineStats) float64 { return s.cpuSeconds }))*100) / 100}}},
		family{name: "process_open_fds", help: "Number of open file descriptors.", typ: typeGauge,
			series: []series{{value: float64(47 + running)}}},
		family{name: "process_max_fds", help: "Maximum number of open file descriptors.", typ: typeGauge,
			series: []series{{value: 1048576}}},
	)
}

var successReasons = []string{"stop", "length", "abort"}

// v1Families adds the vLLM V1 engine families (≈0.11 or ≈0.9).
func (b *famBuilder) v1Families() {
	early := b.v == VersionV1Early
	b.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", func(s *engineSnap) float64 { return float64(s.running) })
	b.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", func(s *engineSnap) float64 { return float64(s.waiting) })
	b.waitingByReason()
	b.sleepState()
	b.admissionRejections()
	if early {
		b.gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", func(s *engineSnap) float64 { return s.kvUsage })
		b.counter("vllm:gpu_prefix_cache_queries", "GPU prefix cache queries, in terms of number of queried tokens.", func(s *engineStats) float64 { return s.prefixQueries })
		b.counter("vllm:gpu_prefix_cache_hits", "GPU prefix cache hits, in terms of number of cached tokens.", func(s *engineStats) float64 { return s.prefixHits })
	} else {
		b.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", func(s *engineSnap) float64 { return s.kvUsage })
		b.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", func(s *engineStats) float64 { return s.prefixQueries })
		b.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", func(s *engineStats) float64 { return s.prefixHits })
	}
	b.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", func(s *engineStats) float64 { return s.preemptions })
	b.specFamilies()
	b.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", func(s *engineStats) float64 { return s.promptTokens })
	b.counter("vllm:generation_tokens", "Number of generation tokens processed.", func(s *engineStats) float64 { return s.genTokens })
	f := family{name: "vllm:request_success", help: "Count of successfully processed requests.", typ: typeCounter, created: true}
	for i := range b.sc.snaps {
		for r, name := range successReasons {
			f.series = append(f.series, series{
				labels: b.engineLabels(i, label{"finished_reason", name}), value: b.sc.snaps[i].st.success[r], created: b.created(),
			})
		}
	}
	b.add(f)
	b.hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", hPromptTokens)
	b.hist("vllm:request_generation_tokens", "Number of generation tokens processed.", hGenTokens)
	b.hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", hIter)
	b.paramHists()
	b.hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", hTTFT)
	if early {
		b.hist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", hITL)
	} else {
		b.hist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.DEPRECATED: Use vllm:inter_token_latency_seconds instead.", hITL)
		b.hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", hITL)
		b.hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", hTPOT)
	}
	b.requestHists("Histogram of e2e request latency in seconds.")
	b.cacheConfig()
	b.nixlFamilies()
}

// nixlFamilies adds the NIXL KV connector's families on a pod with a
// prefill/decode role, as NixlPromMetrics registers them
// (vllm/distributed/kv_transfer/kv_connector/v1/nixl/stats.py @
// bd33ba3ea6d0202d5d6fe7e21c9b1d36374fc638; labels model_name and engine,
// every engine's series created at start-up, so that a prefill pod
// exports them all with nothing observed): the decode pod, which reads
// the KV, observes each transfer and counts the failed ones
// (KVLinkFailure); notifications never fail and KV never expires here.
func (b *famBuilder) nixlFamilies() {
	if b.sc.pod.fleet.Config.Pods[b.sc.pod.Index].Role == "" {
		return
	}
	b.hist("vllm:nixl_xfer_time_seconds", "Histogram of transfer duration for NIXL KV Cache transfers.", hNixlXfer)
	b.hist("vllm:nixl_post_time_seconds", "Histogram of transfer post time for NIXL KV Cache transfers.", hNixlPost)
	b.hist("vllm:nixl_bytes_transferred", "Histogram of bytes transferred per NIXL KV Cache transfers.", hNixlBytes)
	b.hist("vllm:nixl_num_descriptors", "Histogram of number of descriptors per NIXL  KV Cache transfers.", hNixlDesc)
	zero := func(*engineStats) float64 { return 0 }
	b.counter("vllm:nixl_num_failed_transfers", "Number of failed NIXL KV Cache transfers.", func(st *engineStats) float64 { return st.nixlFailed })
	b.counter("vllm:nixl_num_failed_notifications", "Number of failed NIXL KV Cache notifications.", zero)
	b.counter("vllm:nixl_num_kv_expired_reqs", "Number of requests that had their KV expire. NOTE: This metric is tracked on the P instance.", zero)
}

// requestHists adds the per-request phase histograms.
func (b *famBuilder) requestHists(e2eHelp string) {
	b.hist("vllm:e2e_request_latency_seconds", e2eHelp, hE2E)
	b.hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", hQueue)
	b.hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", hInference)
	b.hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", hPrefill)
	b.hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", hDecode)
	if b.sc.pod.fleet.Config.RequestPreemptions && b.v != VersionV0 {
		b.hist("vllm:request_num_preemptions", "Histogram of the number of times a request was preempted.", hPreempt)
	}
}

// specFamilies adds the speculative-decoding counters of
// vllm/v1/spec_decode/metrics.py when the engines speculate.
func (b *famBuilder) specFamilies() {
	if len(b.sc.snaps) == 0 || len(b.sc.snaps[0].st.specPerPos) == 0 {
		return
	}
	b.counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", func(s *engineStats) float64 { return s.specDrafts })
	b.counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", func(s *engineStats) float64 { return s.specDraftTok })
	b.counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", func(s *engineStats) float64 { return s.specAccepted })
	f := family{name: "vllm:spec_decode_num_accepted_tokens_per_pos", help: "Accepted tokens per draft position.", typ: typeCounter, created: true}
	for i := range b.sc.snaps {
		for pos, v := range b.sc.snaps[i].st.specPerPos {
			f.series = append(f.series, series{labels: b.engineLabels(i, label{"position", strconv.Itoa(pos)}), value: v, created: b.created()})
		}
	}
	b.add(f)
}

// v0SpecFamilies adds the speculative-decoding metrics of V0's
// vllm/engine/metrics.py when the engine speculates: the token counters
// (accepted, draft, emitted: the accepted and one more per draft) and
// the acceptance rate and efficiency gauges, both over every draft since
// the process started.
func (b *famBuilder) v0SpecFamilies() {
	if len(b.sc.snaps) == 0 || len(b.sc.snaps[0].st.specPerPos) == 0 {
		return
	}
	k := float64(len(b.sc.snaps[0].st.specPerPos))
	b.counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", func(s *engineStats) float64 { return s.specAccepted })
	b.counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", func(s *engineStats) float64 { return s.specDraftTok })
	b.counter("vllm:spec_decode_num_emitted_tokens", "Number of emitted tokens.", func(s *engineStats) float64 { return s.specAccepted + s.specDrafts })
	b.gauge("vllm:spec_decode_draft_acceptance_rate", "Speulative token acceptance rate.", func(s *engineSnap) float64 {
		if s.st.specDraftTok == 0 {
			return math.NaN()
		}
		return s.st.specAccepted / s.st.specDraftTok
	})
	b.gauge("vllm:spec_decode_efficiency", "Speculative decoding system efficiency.", func(s *engineSnap) float64 {
		if s.st.specDrafts == 0 {
			return math.NaN()
		}
		return (s.st.specAccepted + s.st.specDrafts) / (s.st.specDrafts * (k + 1))
	})
}

// paramHists adds the histograms of the requests' parameters.
func (b *famBuilder) paramHists() {
	b.hist("vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", hMaxGenTokens)
	b.hist("vllm:request_params_n", "Histogram of the n request parameter.", hN)
	b.hist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", hMaxTokens)
}

// cacheConfig adds vllm:cache_config_info, whose labels carry CacheConfig.
func (b *famBuilder) cacheConfig() {
	e := &b.sc.pod.Engine
	py := func(v bool) string {
		if v {
			return "True"
		}
		return "False"
	}
	// What every version prints, most of it from the engine's
	// configuration, then what one version adds; vLLM prints the labels
	// sorted by name.
	ls := []label{
		{"block_size", strconv.Itoa(e.BlockSize)},
		{"cache_dtype", "auto"},
		{"enable_prefix_caching", py(!e.DisablePrefixCaching)},
		{"gpu_memory_utilization", pyRepr(e.GPUMemoryUtilization)},
		{"is_attention_free", "False"},
		{"num_gpu_blocks", strconv.Itoa(e.NumGPUBlocks)},
		{"num_gpu_blocks_override", "None"},
		{"sliding_window", "None"},
	}
	// What the V1 engine adds, in both of its versions.
	v1 := []label{
		{"calculate_kv_scales", "False"},
		{"cpu_offload_gb", "0.0"},
		{"num_cpu_blocks", "None"},
		{"swap_space", "4.0"},
		{"swap_space_bytes", "4294967296.0"},
	}
	switch b.v {
	case VersionV0:
		ls = append(ls, label{"cpu_offload_gb", "0"}, label{"num_cpu_blocks", "2048"}, label{"swap_space_bytes", "4294967296"})
	case VersionV1Early:
		ls = append(append(ls, v1...), label{"prefix_caching_hash_algo", "builtin"})
	default:
		ls = append(append(ls, v1...),
			label{"cpu_kvcache_space_bytes", "None"},
			label{"engine", ""}, // per engine below
			label{"kv_cache_memory_bytes", "None"},
			label{"kv_sharing_fast_prefill", "False"},
			label{"mamba_cache_dtype", "auto"},
			label{"mamba_page_size_padded", "None"},
			label{"mamba_ssm_cache_dtype", "auto"},
			label{"prefix_caching_hash_algo", "sha256"},
		)
	}
	slices.SortFunc(ls, func(x, y label) int { return strings.Compare(x.name, y.name) })
	f := family{name: "vllm:cache_config_info", help: "Information of the LLMEngine CacheConfig", typ: typeGauge}
	if b.v == VersionV1 {
		for i := range b.sc.snaps {
			l := append([]label(nil), ls...)
			for k := range l {
				if l[k].name == "engine" {
					l[k].value = strconv.Itoa(i)
				}
			}
			f.series = append(f.series, series{labels: l, value: 1})
		}
	} else {
		f.series = []series{{labels: ls, value: 1}}
	}
	b.add(f)
}

// httpFamilies adds prometheus-fastapi-instrumentator's families.
func (b *famBuilder) httpFamilies() {
	const handler = "/v1/chat/completions"
	ok := b.sum(func(s *engineStats) float64 { return s.http2xx })
	bad4 := b.sum(func(s *engineStats) float64 { return s.http4xx })
	bad5 := b.sum(func(s *engineStats) float64 { return s.http5xx })
	bad := bad4 + bad5 // immediate answers
	firstOK, first4xx, first5xx := math.Inf(1), math.Inf(1), math.Inf(1)
	for i := range b.sc.snaps {
		st := b.sc.snaps[i].st
		if !math.IsNaN(st.firstOK) {
			firstOK = min(firstOK, st.firstOK)
		}
		if !math.IsNaN(st.first4xx) {
			first4xx = min(first4xx, st.first4xx)
		}
		if !math.IsNaN(st.first5xx) {
			first5xx = min(first5xx, st.first5xx)
		}
	}
	unix := func(off float64) float64 { return float64(b.sc.pod.fleet.Config.Start.UnixNano())/1e9 + off + 0.0213 }
	hm := []label{{"handler", handler}, {"method", "POST"}}
	req := family{name: "http_requests", help: "Total number of requests by method, status and handler.", typ: typeCounter, created: true}
	if ok > 0 {
		req.series = append(req.series, series{labels: append(hm[:2:2], label{"status", "2xx"}), value: ok, created: unix(firstOK)})
	}
	if bad4 > 0 {
		req.series = append(req.series, series{labels: append(hm[:2:2], label{"status", "4xx"}), value: bad4, created: unix(first4xx)})
	}
	if bad5 > 0 {
		req.series = append(req.series, series{labels: append(hm[:2:2], label{"status", "5xx"}), value: bad5, created: unix(first5xx)})
	}
	b.fams = append(b.fams, req)
	const sizeHelp = "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. "
	reqSize := family{name: "http_request_size_bytes", help: sizeHelp, typ: typeSummary, created: true}
	respSize := family{name: "http_response_size_bytes", help: "Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. ", typ: typeSummary, created: true}
	highr := family{name: "http_request_duration_highr_seconds", help: "Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. ", typ: typeHistogram, created: true}
	few := family{name: "http_request_duration_seconds", help: "Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. ", typ: typeHistogram, created: true}
	if ok+bad > 0 {
		first := unix(min(firstOK, first4xx, first5xx))
		hl := []label{{"handler", handler}}
		reqSize.series = []series{{labels: hl, count: ok + bad, sum: b.sum(func(s *engineStats) float64 { return s.reqBytes }), created: first}}
		respSize.series = []series{{labels: hl, count: ok + bad, sum: b.sum(func(s *engineStats) float64 { return s.respBytes }) + 60*bad, created: first}}
		c, s := b.sumHist(hHTTPHighr)
		c[0] += uint64(bad) // 400 and 500 answers are immediate
		highr.series = []series{{bounds: bucketsHTTP, counts: c, sum: s + 0.002*bad, created: b.start + 0.31}}
		c, s = b.sumHist(hHTTPDur)
		c[0] += uint64(bad)
		few.series = []series{{labels: hm, bounds: bucketsHTTPFew, counts: c, sum: s + 0.002*bad, created: first}}
	} else {
		// The instrumentator's histogram without labels exists from the
		// start; labelled children appear with the first request.
		highr.series = []series{{bounds: bucketsHTTP, counts: make([]uint64, len(bucketsHTTP)+1), created: b.start + 0.31}}
	}
	b.fams = append(b.fams, reqSize, respSize, highr, few)
}

// v0Families adds the V0 engine families as its multiprocess registry
// exposes them.
func (b *famBuilder) v0Families() {
	st := b.sc.snaps[0].st
	b.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", func(s *engineStats) float64 { return s.preemptions })
	b.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", func(s *engineStats) float64 { return s.promptTokens })
	b.counter("vllm:generation_tokens", "Number of generation tokens processed.", func(s *engineStats) float64 { return s.genTokens })
	f := family{name: "vllm:request_success", help: "Count of successfully processed requests.", typ: typeCounter}
	for r, name := range successReasons {
		if st.success[r] > 0 { // V0 creates children on first observation
			f.series = append(f.series, series{labels: b.engineLabels(0, label{"finished_reason", name}), value: st.success[r]})
		}
	}
	b.add(f)
	b.add(family{name: "vllm:lora_requests_info", help: "Running stats on lora requests.", typ: typeGauge,
		series: []series{{labels: []label{{"max_lora", "0"}, {"running_lora_adapters", ""}, {"waiting_lora_adapters", ""}},
			value: math.Round((float64(b.sc.Time.UnixNano())/1e9-1.7)*1e6) / 1e6}}})
	b.cacheConfig()
	b.v0SpecFamilies()
	b.gauge("vllm:num_requests_running", "Number of requests currently running on GPU.", func(s *engineSnap) float64 { return float64(s.running) })
	b.gauge("vllm:num_requests_swapped", "Number of requests swapped to CPU.", func(*engineSnap) float64 { return 0 })
	b.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", func(s *engineSnap) float64 { return float64(s.waiting) })
	b.gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", func(s *engineSnap) float64 { return s.kvUsage })
	b.gauge("vllm:cpu_cache_usage_perc", "CPU KV-cache usage. 1 means 100 percent usage.", func(*engineSnap) float64 { return 0 })
	b.gauge("vllm:cpu_prefix_cache_hit_rate", "CPU prefix cache block hit rate.", func(*engineSnap) float64 { return -1 })
	b.gauge("vllm:gpu_prefix_cache_hit_rate", "GPU prefix cache block hit rate.", func(s *engineSnap) float64 {
		if b.sc.pod.Engine.DisablePrefixCaching || s.st.prefixQueries == 0 {
			return -1
		}
		return s.st.prefixHits / s.st.prefixQueries
	})
	b.gauge("vllm:avg_prompt_throughput_toks_per_s", "Average prefill throughput in tokens/s.", func(s *engineSnap) float64 { return s.promptRate })
	b.gauge("vllm:avg_generation_throughput_toks_per_s", "Average generation throughput in tokens/s.", func(s *engineSnap) float64 { return s.genRate })
	b.hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", hTTFT)
	b.hist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", hITL)
	b.requestHists("Histogram of end to end request latency in seconds.")
	b.hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", hPromptTokens)
	b.hist("vllm:request_generation_tokens", "Number of generation tokens processed.", hGenTokens)
	b.paramHists()
	b.hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", hIter)
}
