// Package catalog is whyslow's knowledge of vLLM's metric names: which
// metrics carry which signal in which vLLM version, and which versions a
// capture's names are consistent with. It reads no file and imports no
// whyslow package but snapshot (whose evidence model it resolves); in
// particular not diagnose, rules or report.
//
// The catalog (Catalog, Default, Resolve) maps each signal the diagnosis
// needs (TTFT, queue time, waiting requests, KV usage, GPU utilisation, …)
// to the metric names that carry it across vLLM versions, V0 and V1,
// renamed and deprecated names included, and infers from the names present
// which vLLM versions a capture is consistent with, since no capture states
// its version. The re-exports of Ray Serve (RayPrefix, ray_vllm:) and
// KServe (KServePrefix, kserve_vllm:) are recognised without
// configuration; Alias and WithPrefix adapt the catalog
// to other names (a gateway's client-side TTFT histogram, another
// prefix). A signal no source carries is "cannot evaluate", never zero.
//
// Judging a target "not vLLM" (ErrNotVLLM) is the catalog's job, not
// snapshot's: it knows the prefixes, and it knows the exporters scraped
// beside vLLM (NVIDIA DCGM, the node exporter), which are not wrong inputs.
package catalog
