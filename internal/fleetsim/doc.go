// Package fleetsim is a seeded simulator of vLLM serving fleets that writes
// what an SRE would have preserved: /metrics dumps, /federate dumps,
// OpenMetrics for promtool backfill, and, through its package simtsdb,
// Prometheus TSDB data directories.
// It exists so that the tests of every whyslow package (snapshot, diagnose,
// experiments) run on realistic fleets whose ground truth is known.
//
// # Physics, not hand-written metrics
//
// Metric values are never set directly; they come out of a model of
// continuous batching:
//
//   - Requests arrive as Poisson processes whose rate, prompt and output
//     lengths and shared prefixes change by [Phase]; [Burst]s add short
//     surges. A request is routed to a pod by smooth weighted round-robin
//     (pods that are down are skipped) and to an engine of the pod
//     round-robin (by weight during an [EngineSkew]). The whole trace depends only on Config.TraceSeed and the
//     workload, so [Replay] can run the same requests under other engine
//     settings.
//   - Each engine runs vLLM V1's scheduler step by step: running sequences
//     first (decode tokens, then chunks of unfinished prefills) within
//     max_num_batched_tokens, then waiting requests while fewer than
//     max_num_seqs run and KV blocks can be allocated. KV memory is paged
//     in blocks of block_size tokens; shared prefixes stay cached (and
//     count as free, evictable LRU) after their last user finishes, so a
//     later request with the same prefix skips that part of its prefill.
//     When a running sequence needs a block and none is free, the newest
//     running sequence is preempted by recompute (its blocks freed, back to
//     the head of the queue, counted in vllm:num_preemptions_total).
//   - A step lasts StepOverhead + PrefillPerToken*prefill tokens +
//     DecodePerSeq*decoding sequences + AttentionPerKToken*context/1000
//     of GPU time (±Jitter), plus CPU time during which the GPU idles
//     ([CostModel], [Slowdown]). GPU utilisation is the busy fraction.
//   - Every request records queue, prefill, decode, inference, E2E, TTFT,
//     per-step inter-token latencies and its finish reason; vLLM's
//     histograms and counters are filled exactly where vLLM fills them.
//     Clients may abort requests that wait too long
//     (Workload.ClientTimeout) or take too long in all, streaming ones
//     included (Workload.ClientDeadline), counted as
//     finished_reason="abort" or, with vLLM V1's current accounting
//     ([AbandonUncounted]), nowhere but in the token counters and TTFT;
//     prompts longer than max_model_len are rejected with HTTP 400, a
//     pod's API server may fail requests with HTTP 500 ([ServerErrors])
//     and refuses them with HTTP 503 at vLLM's admission limits
//     (EngineConfig.MaxNumQueuedReqs, MaxNumQueuedTokens; counted in
//     vllm:admission_rejections_total). Several restarts of one pod make
//     a crash loop.
//
// Consecutive pure-decode steps are advanced in O(1) each (decodeRun); a
// test checks that this gives byte-identical output to stepping one
// iteration at a time. Pods are simulated in parallel. Eight pods for 65
// minutes (including the 5-minute warm-up) take well under a second of
// CPU for the healthy scenario.
//
// # Exposition
//
// Each pod is scraped every 15 s (with a seeded skew of up to 2 s between
// pods, and no scrape while it is down). [Scrape.VLLM] renders the page as
// vLLM's prometheus_client does in text format 0.0.4: HELP and TYPE lines
// with vLLM's own texts, counters with _total, _created gauge families
// (V1), labels sorted, le as Python floats ("1.0", "2560.0"), values as
// floatToGoString ("1.394703e+06"), process, python and HTTP
// (prometheus-fastapi-instrumentator) families. Three generations are
// modelled ([VersionV1] ≈0.11, [VersionV1Early] ≈0.9, [VersionV0] ≈0.6
// in multiprocess mode) with their names, labels and bucket layouts; pods
// of one fleet may mix them and may run data-parallel engines
// (engine="0", "1"). [Scrape.DCGM] renders the NVIDIA DCGM exporter's page
// (utilisation in percent or as a ratio, see [GPUExporter]).
//
// Pods may take prefill/decode roles ([PodConfig.Role], llm-d's pod label
// llm-d.ai/role, stored as the target label [RoleLabel]): every request
// is then prefilled on a prefill pod (max_tokens=1), its prompt's KV read
// by a decode pod over [Config.KVLink] (Latency + bytes / Bandwidth, with
// [KVLinkDegradation]s) while it waits there with its blocks allocated,
// then decoded. Both roles export the NIXL connector's families
// (vllm:nixl_xfer_time_seconds, ...), the decode pods observe the
// transfers, and each role's own TTFT histogram shows its leg only: the
// decode pod's starts when the prefill leg has answered (vLLM #29474).
//
// [Fleet.WriteDumps] writes DIR/<pod>/<time>.prom (plus dcgm-<time>.prom)
// or a flat layout, optionally gzipped; [Fleet.WriteFederate] writes
// concatenated /federate responses; [Fleet.WriteOpenMetrics] writes one
// document for `promtool tsdb create-blocks-from openmetrics`;
// [Fleet.EachStored] gives the samples a Prometheus server would have
// stored (target labels, staleness markers, up series), which package
// simtsdb writes as a TSDB directory with blocks and a WAL head; fleetsim
// itself does not link github.com/prometheus/prometheus/tsdb.
//
// # Scenarios
//
// [Scenarios] lists named fleets (8 pods, 60 minutes, incident from
// [IncidentStart]) for every row of the diagnosis map and its
// counter-cases: healthy, sustained-overload, burst, long-prompts,
// prefix-cache-loss, decode-pressure, kv-preemption, outside-gpu,
// hot-replica, high-kv-healthy, low-traffic, restart, mixed-versions. Each
// names the diagnosis it is built to produce ([ScenarioSpec.Expect]).
//
// # Generalisation matrix
//
// [MatrixCases] builds every incident hypothesis at any fleet size, seed
// and severity knob ([MatrixCase.Config]), plus counter-cases (healthy,
// KV ~90% without preemption, low traffic, a single restart, mixed
// versions under steady load, +10% traffic), with incidents shaped
// unlike the textbook scenarios (moderate rate rises, 10 s bursts every
// minute, a hot replica at twice its share, ...). Runs last
// [MatrixDuration] with the incident from [MatrixIncidentStart]; the
// arrival rate scales with the fleet. [Fleet.GroundTruth] measures the
// change of a symptom's fleet p95 from the request records, [Severity]
// grades it, and [MatrixKnob] gives the precomputed knob of each (case,
// size, severity), checked by TestSeverityTable and searched by
// TestCalibrate -calibrate. Package internal/matrix diagnoses the cells.
//
// # Ground truth
//
// [Fleet.Requests] holds every request with its times and fate;
// [Scrape.Engines] the true running, waiting, KV usage and GPU busy
// fraction at each scrape; [Pod] the largest running count and KV blocks
// reached.
//
// # Simplifications
//
// Tensor parallelism, speculative decoding, LoRA, multi-modal inputs,
// sampling with n > 1, CPU swap (V0), priority scheduling and KV
// connectors other than the prefill/decode NIXL transfer are not
// modelled. In prefill/decode disaggregation the prefill pod holds a
// request's blocks for one transfer time after it answers (vLLM frees
// them when the decode pod has read them, after its own queue, or when
// their lease expires), transfers never fail and do not share the link's
// bandwidth, and the decode pod reads the whole prompt (no local
// prefix-cache hit). Only shared prefixes declared by the
// workload are cached (vLLM also reuses a preempted request's own blocks;
// here a preempted request recomputes everything but its shared prefix).
// The data-parallel load balancer is round-robin rather than
// queue-aware. HTTP metrics count completions (2xx), rejections (4xx) and
// server errors (5xx); client aborts and requests lost in a restart do not
// reach them. Process
// and Python metrics are plausible, not modelled.
package fleetsim
