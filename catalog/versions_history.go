package catalog

// This file is vLLM's metric name history as data: which versions of which
// engine emit which family, and which bucket layouts changed. Sources:
// reference/vllm-metrics.md and vllm-metrics.json (vllm/engine/metrics.py
// for V0, vllm/v1/metrics/loggers.py for V1, the release notes and PRs they
// cite); for 0.30 and later, the vLLM 0.30.0 capture of
// testdata/realdata/vllm, vllm/v1/metrics/buckets.py,
// vllm/v1/spec_decode/metrics.py and the NIXL connector's stats.py (see
// catalog/testdata/README.md for commits). The vLLM repository's release
// tags could not be read; names first seen after 0.10 are dated by the pull
// request that added them and by releases known to have shipped before it
// (docs/inputs.md, "Where each date comes from"), so their first release
// stays Unverified and Min is a lower bound, never a guess.
// Upper bounds are exclusive: "until 0.10" is Between(…, 0.10.0).
//
// Confidence follows the reference's "verified" column: "yes" is
// Documented, "partial" and "~" dates are Approximate, "no" and
// "unknown(…)" are Unverified (an unknown first release is written as the
// release after the last one known to lack the metric).

// history returns the name history; History documents it.
func history() []Era {
	// Bucket sets of vllm-metrics.md section 3, finite bounds only.
	bucketsTTFTV0 := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
	bucketsTTFTExt := append(append([]float64(nil), bucketsTTFTV0...), 20, 40, 80, 160, 640, 2560)
	bucketsTPOTV0 := []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
	bucketsTPOTExt := append(append([]float64(nil), bucketsTPOTV0...), 5.0, 7.5, 10, 20, 40, 80)
	bucketsE2EOld := []float64{1.0, 2.5, 5.0, 10, 15, 20, 30, 40, 50, 60}
	bucketsReqV0 := []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10, 15, 20, 30, 40, 50, 60}
	bucketsReqExt := append(append([]float64(nil), bucketsReqV0...), 120, 240, 480, 960, 1920, 7680)
	bucketsIterOld := []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8096}
	bucketsIterFix := []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	// vllm/v1/metrics/buckets.py @ 139b1c3f17720f4bb6865309f365e6b1f1607a45:
	// le="1" holds never- and once-preempted requests alike.
	bucketsPreempt := []float64{1, 2, 3, 4, 5, 10, 20}
	v0 := func(first, last string) VersionRange { return Between(EngineV0, mustVersion(first), mustVersion(last)) }
	v1 := func(first string) VersionRange { return Since(EngineV1, mustVersion(first)) }
	v1b := func(first, last string) VersionRange { return Between(EngineV1, mustVersion(first), mustVersion(last)) }
	upTo := func(e Engine, first, firstWithout string) VersionRange {
		return VersionRange{Engine: e, Min: mustVersion(first), Max: mustVersion(firstWithout)}
	}
	const (
		doc    = Documented
		approx = Approximate
		unver  = Unverified
	)
	era := func(name string, r VersionRange, c Confidence, def bool, note string) Era {
		return Era{Metric: name, Versions: r, Confidence: c, Default: def, Note: note}
	}
	layout := func(name string, r VersionRange, c Confidence, b []float64, note string) Era {
		return Era{Metric: name, Versions: r, Confidence: c, Bounds: b, Note: note}
	}
	return []Era{
		// V0 engine (vllm/engine/metrics.py); no _created, label model_name.
		era("vllm:num_requests_running", v0("0.3", "0.10"), doc, true, "running requests"),
		era("vllm:num_requests_waiting", v0("0.3", "0.10"), doc, true, "queued requests"),
		era("vllm:num_requests_swapped", v0("0.3", "0.8"), approx, true, "hidden from 0.9"),
		era("vllm:gpu_cache_usage_perc", v0("0.3", "0.10"), doc, true, "KV usage, fraction 0..1"),
		era("vllm:cpu_cache_usage_perc", v0("0.3", "0.8"), approx, true, "CPU swap space usage"),
		era("vllm:gpu_prefix_cache_hit_rate", v0("0.6", "0.8"), approx, true, "block hit rate, -1 when unknown"),
		era("vllm:cpu_prefix_cache_hit_rate", v0("0.6", "0.8"), approx, true, ""),
		era("vllm:num_preemptions_total", v0("0.4", "0.10"), doc, true, ""),
		era("vllm:prompt_tokens_total", v0("0.3", "0.10"), doc, true, ""),
		era("vllm:generation_tokens_total", v0("0.3", "0.10"), doc, true, ""),
		era("vllm:tokens_total", v0("0.6", "0.7"), approx, false, "registered, never incremented"),
		era("vllm:request_success_total", v0("0.4", "0.10"), doc, true, "children created on first finish"),
		era("vllm:avg_prompt_throughput_toks_per_s", v0("0.3", "0.6"), approx, true, "removed by PR 12383"),
		era("vllm:avg_generation_throughput_toks_per_s", v0("0.3", "0.6"), approx, true, "removed by PR 12383"),
		era("vllm:time_to_first_token_seconds", v0("0.3", "0.10"), doc, true, ""),
		era("vllm:time_per_output_token_seconds", v0("0.3", "0.10"), doc, true, "per-step inter-token latency"),
		era("vllm:e2e_request_latency_seconds", v0("0.3", "0.10"), doc, true, ""),
		era("vllm:request_queue_time_seconds", v0("0.6.4", "0.10"), approx, true, "PR 4464"),
		era("vllm:request_inference_time_seconds", v0("0.6.4", "0.10"), approx, true, "PR 4464"),
		era("vllm:request_prefill_time_seconds", v0("0.6.4", "0.10"), approx, true, "PR 4464"),
		era("vllm:request_decode_time_seconds", v0("0.6.4", "0.10"), approx, true, "PR 4464"),
		era("vllm:time_in_queue_requests", v0("0.6.4", "0.8"), approx, true, "duplicate of request_queue_time_seconds"),
		era("vllm:model_forward_time_milliseconds", v0("0.6", "0.8"), approx, false, "OTLP detailed traces only"),
		era("vllm:model_execute_time_milliseconds", v0("0.6", "0.8"), approx, false, "OTLP detailed traces only"),
		era("vllm:iteration_tokens_total", v0("0.6.4", "0.10"), approx, true, "a histogram despite _total"),
		era("vllm:request_prompt_tokens", v0("0.4", "0.10"), doc, true, ""),
		era("vllm:request_generation_tokens", v0("0.4", "0.10"), doc, true, ""),
		era("vllm:request_max_num_generation_tokens", v0("0.6.4", "0.10"), approx, true, ""),
		era("vllm:request_params_max_tokens", v0("0.6.4", "0.10"), approx, true, ""),
		era("vllm:request_params_n", v0("0.4", "0.10"), doc, true, ""),
		era("vllm:request_params_best_of", v0("0.4", "0.6"), approx, true, ""),
		era("vllm:cache_config_info", v0("0.4", "0.10"), doc, true, "labels are CacheConfig fields"),
		era("vllm:lora_requests_info", v0("0.6", "0.10"), approx, true, "always registered in V0"),
		era("vllm:spec_decode_draft_acceptance_rate", v0("0.5", "0.10"), doc, false, "speculative decoding only"),
		era("vllm:spec_decode_efficiency", v0("0.5", "0.10"), doc, false, "speculative decoding only"),
		era("vllm:spec_decode_num_accepted_tokens_total", v0("0.5", "0.10"), doc, false, "speculative decoding only"),
		era("vllm:spec_decode_num_draft_tokens_total", v0("0.5", "0.10"), doc, false, "speculative decoding only"),
		era("vllm:spec_decode_num_emitted_tokens_total", v0("0.5", "0.10"), doc, false, "speculative decoding only"),

		// V1 engine (vllm/v1/metrics/loggers.py); _created families,
		// labels model_name and engine.
		era("vllm:num_requests_running", v1("0.8"), doc, true, ""),
		era("vllm:num_requests_waiting", v1("0.8"), doc, true, ""),
		era("vllm:num_requests_waiting_by_reason", v1("0.17"), unver, false, "reason=capacity|deferred; PR 38435 (opened 2026-03-28, after the 0.16 branch); in the 0.30.0 capture"),
		era("vllm:gpu_cache_usage_perc", v1b("0.8", "0.10"), doc, true, "hidden 0.11, removed 0.12"),
		era("vllm:kv_cache_usage_perc", v1("0.9.2"), doc, true, "KV usage, fraction 0..1"),
		era("vllm:gpu_prefix_cache_queries_total", v1b("0.8", "0.10"), doc, true, "hidden 0.11, removed 0.12"),
		era("vllm:gpu_prefix_cache_hits_total", v1b("0.8", "0.10"), doc, true, "hidden 0.11, removed 0.12"),
		era("vllm:prefix_cache_queries_total", v1("0.9.2"), doc, true, "tokens looked up"),
		era("vllm:prefix_cache_hits_total", v1("0.9.2"), doc, true, "tokens found"),
		era("vllm:external_prefix_cache_queries_total", VersionRange{Engine: EngineV1}, unver, false, "KV connector only"),
		era("vllm:external_prefix_cache_hits_total", VersionRange{Engine: EngineV1}, unver, false, "KV connector only"),
		era("vllm:mm_cache_queries_total", v1("0.11"), unver, false, "multimodal processor cache"),
		era("vllm:mm_cache_hits_total", v1("0.11"), unver, false, "multimodal processor cache"),
		era("vllm:num_preemptions_total", v1("0.8"), doc, true, ""),
		era("vllm:prompt_tokens_total", v1("0.8"), doc, true, "prefix-cache hits included"),
		era("vllm:generation_tokens_total", v1("0.8"), doc, true, ""),
		era("vllm:prompt_tokens_by_source_total", v1("0.15"), unver, false, "source=local_compute|local_cache_hit|external_kv_transfer; PR 33290 (approved 2026-02-03, after 0.14.x); in the 0.30.0 capture"),
		era("vllm:prompt_tokens_cached_total", v1("0.15"), unver, false, "PR 33290 (approved 2026-02-03, after 0.14.x); in the 0.30.0 capture"),
		era("vllm:request_success_total", v1("0.8"), doc, true, "all reasons pre-created at 0"),
		era("vllm:corrupted_requests_total", VersionRange{Engine: EngineV1}, unver, false, "VLLM_COMPUTE_NANS_IN_LOGITS=1 only"),
		era("vllm:iteration_tokens_total", v1("0.8"), doc, true, "a histogram despite _total"),
		era("vllm:request_prompt_tokens", v1("0.8"), doc, true, ""),
		era("vllm:request_generation_tokens", v1("0.8"), doc, true, ""),
		era("vllm:request_max_num_generation_tokens", v1("0.8"), doc, true, ""),
		era("vllm:request_params_max_tokens", v1("0.8"), doc, true, ""),
		era("vllm:request_params_n", v1("0.8"), doc, true, ""),
		era("vllm:request_prefill_kv_computed_tokens", v1("0.13"), unver, false, "PR 30189 (opened 2025-12-06); in the 0.30.0 capture"),
		era("vllm:time_to_first_token_seconds", v1("0.7"), doc, true, ""),
		era("vllm:time_per_output_token_seconds", v1b("0.7", "0.11"), doc, true, "deprecated 0.11, hidden 0.12-0.13"),
		era("vllm:inter_token_latency_seconds", v1("0.10.2"), approx, true, "0.11 in release notes, seen in a 0.10.2 dump"),
		era("vllm:request_time_per_output_token_seconds", v1("0.11"), doc, true, "PR 24015"),
		era("vllm:e2e_request_latency_seconds", v1("0.7"), doc, true, ""),
		era("vllm:request_queue_time_seconds", v1("0.7"), doc, true, ""),
		era("vllm:request_inference_time_seconds", v1("0.7"), doc, true, ""),
		era("vllm:request_prefill_time_seconds", v1("0.7"), doc, true, ""),
		era("vllm:request_decode_time_seconds", v1("0.7"), doc, true, ""),
		era("vllm:request_num_preemptions", v1("0.29"), approx, false, "PR 49984 (merged after 2026-08-31; 0.29.0 out by 2026-09-09, not checked), in the 0.30.0 capture; Rust frontend from PR 57033"),
		era("vllm:kv_block_lifetime_seconds", v1("0.12"), doc, false, "opt-in KV residency"),
		era("vllm:kv_block_idle_before_evict_seconds", v1("0.12"), doc, false, "opt-in KV residency"),
		era("vllm:kv_block_reuse_gap_seconds", v1("0.12"), doc, false, "opt-in KV residency"),
		era("vllm:engine_sleep_state", v1("0.11.1"), unver, false, "sleep_state=awake|weights_offloaded|discard_all; PR 24176 (dev mode), PR 27867 (2025-10-31, every server); in the 0.30.0 capture"),
		era("vllm:cache_config_info", v1("0.8"), doc, true, "engine label from ~0.10"),
		era("vllm:lora_requests_info", v1("0.8"), doc, false, "LoRA only"),
		era("vllm:spec_decode_num_draft_tokens_total", v1("0.8"), doc, false, "speculative decoding only (vllm/v1/spec_decode/metrics.py)"),
		era("vllm:spec_decode_num_accepted_tokens_total", v1("0.8"), doc, false, "speculative decoding only"),
		era("vllm:spec_decode_num_drafts_total", v1("0.9"), unver, false, "speculative decoding only; PR 16665 (2025-04-15), in the v0.9.2 API docs, 0.8.5 not checked"),
		era("vllm:spec_decode_num_accepted_tokens_per_pos_total", v1("0.9"), unver, false, "speculative decoding only; PR 16665 (2025-04-15), in the v0.9.2 API docs, 0.8.5 not checked"),
		era("vllm:estimated_flops_per_gpu_total", v1("0.13"), unver, false, "opt-in MFU; PR 30950 (opened 2025-12-18)"),
		era("vllm:estimated_read_bytes_per_gpu_total", v1("0.13"), unver, false, "opt-in MFU"),
		era("vllm:estimated_write_bytes_per_gpu_total", v1("0.13"), unver, false, "opt-in MFU"),

		// NIXL KV connector (prefill/decode disaggregation), labels
		// model_name and engine: vllm/distributed/kv_transfer/kv_connector/
		// v1/nixl/stats.py @ bd33ba3ea6d0202d5d6fe7e21c9b1d36374fc638. Its
		// Prometheus metrics came with PR 26811 (under review until
		// 2025-10-28, when 0.11.0 had shipped): the bound is kept at 0.11,
		// the release the alert generator targets, though 0.11.1 is the
		// earliest that can have them; first releases unverified.
		era("vllm:nixl_xfer_time_seconds", v1("0.11"), unver, false, "NIXL connector only; PR 26811"),
		era("vllm:nixl_post_time_seconds", v1("0.11"), unver, false, "NIXL connector only; PR 26811"),
		era("vllm:nixl_bytes_transferred", v1("0.11"), unver, false, "NIXL connector only; PR 26811"),
		era("vllm:nixl_num_descriptors", v1("0.11"), unver, false, "NIXL connector only; PR 26811"),
		era("vllm:nixl_num_failed_transfers_total", v1("0.11"), unver, false, "NIXL connector only; handshake failures too from PR 55854"),
		era("vllm:nixl_num_failed_notifications_total", v1("0.11"), unver, false, "NIXL connector only"),
		era("vllm:nixl_num_kv_expired_reqs_total", v1("0.13"), unver, false, "NIXL connector only; counted on the prefill instance; PR 32340 (opened 2026-01-14)"),

		// Frontend admission control (--max-num-queued-reqs/-tokens), label
		// reason, no engine label: listed in the v0.32.0 release docs, absent
		// from the 0.30.0 capture; 0.31 not checked.
		era("vllm:admission_rejections_total", v1("0.31"), unver, false, "PR 55812; in the v0.32.0 docs, not in the 0.30.0 capture"),
		// Not listed: vllm:request_priority and vllm:scheduler_policy_info
		// (unmerged pull requests, in no release).

		// OpenAI server HTTP metrics (prometheus-fastapi-instrumentator),
		// either engine: PR 15657 (V0), fixed for V1 by PR 15894.
		era("http_requests_total", Since(EngineUnknown, mustVersion("0.8.4")), approx, false, "counted when a response ends"),
		era("http_request_size_bytes", Since(EngineUnknown, mustVersion("0.8.4")), approx, false, "summary"),
		era("http_response_size_bytes", Since(EngineUnknown, mustVersion("0.8.4")), approx, false, "summary"),
		era("http_request_duration_highr_seconds", Since(EngineUnknown, mustVersion("0.8.4")), approx, false, "to response end"),
		era("http_request_duration_seconds", Since(EngineUnknown, mustVersion("0.8.4")), approx, false, "to response end"),

		// Bucket layouts that changed (section 3).
		layout("vllm:time_to_first_token_seconds", v0("0.3", "0.10"), doc, bucketsTTFTV0, "TTFT_V0"),
		layout("vllm:time_to_first_token_seconds", upTo(EngineV1, "0.7", "0.8.4"), unver, bucketsTTFTV0, "TTFT_V0, assumed for early V1"),
		layout("vllm:time_to_first_token_seconds", v1("0.8.4"), approx, bucketsTTFTExt, "TTFT_EXT, PR 15202"),
		layout("vllm:time_per_output_token_seconds", v0("0.3", "0.10"), doc, bucketsTPOTV0, "TPOT_V0"),
		layout("vllm:time_per_output_token_seconds", upTo(EngineV1, "0.7", "0.8.4"), unver, bucketsTPOTV0, "TPOT_V0, assumed for early V1"),
		layout("vllm:time_per_output_token_seconds", v1b("0.8.4", "0.11"), approx, bucketsTPOTExt, "TPOT_EXT, PR 15202"),
		layout("vllm:e2e_request_latency_seconds", upTo(EngineV0, "0.3", "0.6.4"), approx, bucketsE2EOld, "E2E_OLD"),
		layout("vllm:e2e_request_latency_seconds", v0("0.6.4", "0.10"), approx, bucketsReqV0, "REQ_V0"),
		layout("vllm:e2e_request_latency_seconds", upTo(EngineV1, "0.7", "0.8.4"), unver, bucketsReqV0, "REQ_V0, assumed for early V1"),
		layout("vllm:e2e_request_latency_seconds", v1("0.8.4"), approx, bucketsReqExt, "REQ_EXT, PR 15202"),
		layout("vllm:request_queue_time_seconds", v1("0.8.4"), approx, bucketsReqExt, "REQ_EXT, PR 15202"),
		layout("vllm:request_inference_time_seconds", v1("0.8.4"), approx, bucketsReqExt, "REQ_EXT, PR 15202"),
		layout("vllm:request_prefill_time_seconds", v1("0.8.4"), approx, bucketsReqExt, "REQ_EXT, PR 15202"),
		layout("vllm:request_decode_time_seconds", v1("0.8.4"), approx, bucketsReqExt, "REQ_EXT, PR 15202"),
		layout("vllm:iteration_tokens_total", v0("0.6.4", "0.10"), approx, bucketsIterOld, "ITER_OLD (enforce_eager)"),
		layout("vllm:iteration_tokens_total", v1b("0.8", "0.9"), approx, bucketsIterOld, "ITER_OLD (enforce_eager)"),
		layout("vllm:iteration_tokens_total", v1("0.10"), approx, bucketsIterFix, "ITER_FIXED"),
		layout("vllm:request_num_preemptions", v1("0.29"), approx, bucketsPreempt, "REQUEST_NUM_PREEMPTIONS_BUCKETS"),
	}
}
