package fleetsim

import (
	"math"
	"slices"
	"sort"
)

// Bucket sets of vLLM's histograms (see reference/vllm-metrics.md §3).
var (
	bucketsTTFTV0  = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
	bucketsTTFTExt = append(slices.Clone(bucketsTTFTV0), 20, 40, 80, 160, 640, 2560)
	bucketsTPOTV0  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
	bucketsTPOTExt = append(slices.Clone(bucketsTPOTV0), 5.0, 7.5, 10, 20, 40, 80)
	bucketsReqV0   = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10, 15, 20, 30, 40, 50, 60}
	bucketsReqExt  = append(slices.Clone(bucketsReqV0), 120, 240, 480, 960, 1920, 7680)
	bucketsIterOld = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8096}
	bucketsIterNew = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	bucketsN       = []float64{1, 2, 5, 10, 20}
	bucketsPreempt = []float64{1, 2, 3, 4, 5, 10, 20}
	bucketsHTTP    = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 7.5, 10, 30, 60}
	bucketsHTTPFew = []float64{0.1, 0.5, 1}
	// The NIXL connector's histograms (NixlPromMetrics in
	// vllm/distributed/kv_transfer/kv_connector/v1/nixl/stats.py @
	// bd33ba3ea6d0202d5d6fe7e21c9b1d36374fc638): the post time uses the
	// whole list, the transfer time all but its first bound; bytes are
	// 2^(10+i) for odd i from 1 to 23 (2 KiB to 8 GiB).
	bucketsNixlPost  = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0}
	bucketsNixlXfer  = bucketsNixlPost[1:]
	bucketsNixlBytes = nixlBytesBuckets()
	bucketsNixlDesc  = []float64{10, 20, 30, 50, 75, 100, 200, 400, 1000, 2000, 4000, 10000, 20000, 50000}
)

func nixlBytesBuckets() []float64 {
	var b []float64
	for i := 1; i < 25; i += 2 {
		b = append(b, math.Ldexp(1, 10+i))
	}
	return b
}

// buckets125 returns vLLM's 1-2-5 token buckets up to maxModelLen
// (TOK_125).
func buckets125(maxModelLen int) []float64 {
	var b []float64
	for m := 1.0; ; m *= 10 {
		for _, k := range []float64{1, 2, 5} {
			if k*m > float64(maxModelLen) {
				return b
			}
			b = append(b, k*m)
		}
	}
}

// Histogram indices in engineStats.
const (
	hTTFT = iota
	hITL
	hTPOT // per-request decode time / (generated-1)
	hE2E
	hQueue
	hInference
	hPrefill
	hDecode
	hPromptTokens
	hGenTokens
	hMaxGenTokens
	hMaxTokens
	hN
	hIter
	hHTTPHighr
	hHTTPDur
	hPreempt // preemptions per finished request (vLLM 0.29 or 0.30 on)
	// NIXL KV transfers of a decode pod, one observation per transfer:
	// duration, RDMA post time, bytes and descriptors.
	hNixlXfer
	hNixlPost
	hNixlBytes
	hNixlDesc
	numHists
)

// layout gives the bucket bounds of every histogram of one engine.
type layout [numHists][]float64

func newLayout(v Version, maxModelLen int) *layout {
	var l layout
	tok := buckets125(maxModelLen)
	l[hPromptTokens], l[hGenTokens], l[hMaxGenTokens], l[hMaxTokens] = tok, tok, tok, tok
	l[hN] = bucketsN
	l[hPreempt] = bucketsPreempt
	l[hHTTPHighr], l[hHTTPDur] = bucketsHTTP, bucketsHTTPFew
	l[hNixlXfer], l[hNixlPost], l[hNixlBytes], l[hNixlDesc] = bucketsNixlXfer, bucketsNixlPost, bucketsNixlBytes, bucketsNixlDesc
	switch v {
	case VersionV0:
		l[hTTFT], l[hITL], l[hTPOT] = bucketsTTFTV0, bucketsTPOTV0, bucketsTPOTV0
		for _, h := range []int{hE2E, hQueue, hInference, hPrefill, hDecode} {
			l[h] = bucketsReqV0
		}
		l[hIter] = bucketsIterOld
	default:
		l[hTTFT], l[hITL], l[hTPOT] = bucketsTTFTExt, bucketsTPOTExt, bucketsTPOTExt
		for _, h := range []int{hE2E, hQueue, hInference, hPrefill, hDecode} {
			l[h] = bucketsReqExt
		}
		l[hIter] = bucketsIterNew
		if v == VersionV1Early {
			l[hIter] = bucketsIterOld
		}
	}
	return &l
}

// engineStats holds the cumulative counters and histograms of one engine
// process (plus the API-server counters attributed to it), as vLLM would
// export them.
type engineStats struct {
	lay *layout
	// counts holds the per-bucket (non-cumulative) counts of every
	// histogram, the +Inf bucket last; off[h] is where histogram h starts.
	counts []uint64
	off    [numHists + 1]int
	sums   [numHists]float64

	promptTokens, genTokens   float64
	preemptions               float64
	nixlFailed                float64 // failed KV reads (KVLinkFailure)
	prefixQueries, prefixHits float64
	success                   [3]float64 // stop, length, abort
	http2xx, http4xx          float64
	http5xx, first5xx         float64 // HTTP 500 and 503 answers; first one, NaN before
	// refused counts the requests refused at admission (HTTP 503), by
	// admissionReasons.
	refused             [2]float64
	reqBytes, respBytes float64
	gpuBusy             float64 // seconds
	cpuSeconds          float64 // API server + engine CPU time
	firstOK, first4xx   float64 // first HTTP 2xx / 4xx, NaN before
	// speculative decoding: drafts, draft tokens, accepted tokens, and
	// accepted tokens by draft position
	specDrafts, specDraftTok, specAccepted float64
	specPerPos                             []float64
}

// Indices of success.
const (
	reasonStop = iota
	reasonLength
	reasonAbort
)

func newEngineStats(l *layout) *engineStats {
	s := &engineStats{lay: l, firstOK: math.NaN(), first4xx: math.NaN(), first5xx: math.NaN()}
	n := 0
	for h := range numHists {
		s.off[h] = n
		n += len(l[h]) + 1
	}
	s.off[numHists] = n
	s.counts = make([]uint64, n)
	return s
}

// observe records one observation v in histogram h.
func (s *engineStats) observe(h int, v float64) {
	s.observeN(h, v, 1)
}

// observeN records n observations of v in histogram h.
func (s *engineStats) observeN(h int, v float64, n int) {
	if n <= 0 {
		return
	}
	i := sort.SearchFloat64s(s.lay[h], v) // first bound >= v: le semantics
	s.counts[s.off[h]+i] += uint64(n)
	s.sums[h] += v * float64(n)
}

// hist returns the per-bucket counts of histogram h.
func (s *engineStats) hist(h int) []uint64 {
	return s.counts[s.off[h]:s.off[h+1]]
}

// count returns the number of observations of histogram h.
func (s *engineStats) count(h int) uint64 {
	var n uint64
	for _, c := range s.hist(h) {
		n += c
	}
	return n
}

// clone returns a deep copy of s.
func (s *engineStats) clone() *engineStats {
	c := *s
	c.counts = slices.Clone(s.counts)
	c.specPerPos = slices.Clone(s.specPerPos)
	return &c
}
