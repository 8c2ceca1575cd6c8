package fleetsim

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pdConfig is one prefill pod and two decode pods for 12 minutes at 4
// requests/s per pod; from minute 6 the KV link's bandwidth falls by
// factor (1: never).
func pdConfig(factor float64) Config {
	ph := DefaultPhase
	ph.Rate = 12
	c := Config{
		Seed: 3, Duration: 12 * time.Minute,
		Pods:     []PodConfig{{Name: "p", Role: RolePrefill}, {Name: "d0", Role: RoleDecode}, {Name: "d1", Role: RoleDecode}},
		Workload: Workload{Phases: []Phase{ph}},
	}
	if factor != 1 {
		c.KVLink.Degradations = []KVLinkDegradation{{From: 6 * time.Minute, To: time.Hour, Factor: factor}}
	}
	return c
}

// histDelta is histogram h's observations and sum over pod's engine 0
// between scrapes a and b.
func histDelta(p *Pod, h, a, b int) (n, sum float64) {
	x, y := p.Scrapes[a].snaps[0].st, p.Scrapes[b].snaps[0].st
	return float64(y.count(h) - x.count(h)), y.sums[h] - x.sums[h]
}

// TestDisaggregated: a request is prefilled on the prefill pod (one
// output token), its KV read by a decode pod over the link (Latency +
// bytes / Bandwidth, whole blocks), then decoded there. Each role's own
// TTFT histogram shows its leg: the decode pod's starts when the prefill
// leg ends and under-reports the user's (vLLM #29474).
func TestDisaggregated(t *testing.T) {
	f, err := Run(pdConfig(1))
	require.NoError(t, err)
	var userTTFT, n float64
	var bytesSum float64
	for i := range f.Requests {
		r := &f.Requests[i]
		assert.Equal(t, 0, r.PrefillPod, "request %d", i)
		if r.Status != StatusFinished {
			continue
		}
		require.Contains(t, []int{1, 2}, r.Pod, "request %d", i)
		userTTFT += r.TTFT().Seconds()
		bytesSum += math.Ceil(float64(r.PromptTokens)/16) * 16 * 131072
		n++
	}
	require.Greater(t, n, 5000.0)
	last := len(f.Pods[0].Scrapes) - 1
	pre := f.Pods[0].Scrapes[last].snaps[0].st
	assert.Equal(t, 1.0, pre.sums[hGenTokens]/float64(pre.count(hGenTokens)), "the prefill leg asks for one token")
	assert.Zero(t, pre.count(hNixlXfer), "the decode pod observes the transfers")
	var xn, xs, dn, ds float64
	for _, p := range f.Pods[1:] {
		st := p.Scrapes[len(p.Scrapes)-1].snaps[0].st
		xn += float64(st.count(hNixlXfer))
		xs += st.sums[hNixlXfer]
		dn += float64(st.count(hTTFT))
		ds += st.sums[hTTFT]
		assert.Zero(t, st.count(hPrefill)-st.count(hE2E), "one observation per finished request")
	}
	// Transfers counted since the warm-up; the finished requests of the
	// run are most of them.
	want := 0.002 + bytesSum/n/12.5e9
	assert.InEpsilon(t, want, xs/xn, 0.03, "mean transfer time: latency + bytes / bandwidth")
	preTTFT := pre.sums[hTTFT] / float64(pre.count(hTTFT))
	assert.Less(t, ds/dn, userTTFT/n-0.5*preTTFT, "the decode pods' TTFT leaves out the prefill leg")
	assert.Greater(t, ds/dn, xs/xn, "the decode pods' TTFT holds the transfer")

	// The exposition: NIXL families as vLLM's NixlPromMetrics writes them,
	// on both roles; the role as the pod label llm-d sets.
	for _, p := range f.Pods {
		page := string(p.Scrapes[last].VLLM())
		for _, s := range []string{
			"# TYPE vllm:nixl_xfer_time_seconds histogram",
			`vllm:nixl_xfer_time_seconds_bucket{engine="0",le="0.005",model_name=`,
			`vllm:nixl_bytes_transferred_bucket{engine="0",le="8.589934592e+09",model_name=`,
			`vllm:nixl_num_descriptors_bucket{engine="0",le="50000.0",model_name=`,
			`vllm:nixl_post_time_seconds_bucket{engine="0",le="0.001",model_name=`,
			"vllm:nixl_num_failed_transfers_total{",
			"vllm:nixl_num_failed_notifications_total{",
			"vllm:nixl_num_kv_expired_reqs_total{",
		} {
			assert.Contains(t, page, s, p.Name)
		}
	}
	var fed bytes.Buffer
	require.NoError(t, f.WriteFederate(&fed))
	assert.Contains(t, fed.String(), `llm_d_ai_role="prefill"`)
	assert.Contains(t, fed.String(), `llm_d_ai_role="decode"`)
	assert.Equal(t, 0, strings.Count(fed.String(), `llm_d_ai_role=""`))
}

// TestDisaggregatedLinkDegradation: a slower link lengthens every
// transfer that starts during it, and the decode pods' TTFT with it; the
// prefill pod computes as before but holds the blocks longer.
func TestDisaggregatedLinkDegradation(t *testing.T) {
	base, err := Run(pdConfig(1))
	require.NoError(t, err)
	slow, err := Run(pdConfig(20))
	require.NoError(t, err)
	mid := len(base.Pods[1].Scrapes) / 2
	end := len(base.Pods[1].Scrapes) - 1
	for _, pi := range []int{1, 2} {
		n0, s0 := histDelta(slow.Pods[pi], hNixlXfer, 1, mid-1)
		n1, s1 := histDelta(slow.Pods[pi], hNixlXfer, mid+1, end)
		assert.Greater(t, s1/n1, 10*s0/n0, "transfer time on %s", slow.Pods[pi].Name)
		b1, bs1 := histDelta(base.Pods[pi], hTTFT, mid+1, end)
		d1, ds1 := histDelta(slow.Pods[pi], hTTFT, mid+1, end)
		assert.Greater(t, ds1/d1, 2*bs1/b1, "decode TTFT on %s", slow.Pods[pi].Name)
	}
	// The prefill pod computes as before, but holds each request's
	// blocks until the decode pod has read them: longer on the slow link.
	bn, bs := histDelta(base.Pods[0], hTTFT, mid+1, end)
	sn, ss := histDelta(slow.Pods[0], hTTFT, mid+1, end)
	assert.Equal(t, bn, sn, "prefill legs")
	assert.InEpsilon(t, bs/bn, ss/sn, 0.02, "prefill TTFT")
	kv := func(f *Fleet) (m float64) {
		for _, sc := range f.Pods[0].Scrapes[mid+1:] {
			m += sc.Engines[0].KVUsage
		}
		return m / float64(len(f.Pods[0].Scrapes[mid+1:]))
	}
	// 12 requests/s of ~64 blocks each held ~0.23 s longer: ~180 of the
	// pod's ~12,900 blocks, 1.4% of them.
	assert.InDelta(t, 0.014, kv(slow)-kv(base), 0.005, "prefill KV usage held for the reads")
}

// TestDisaggregatedTransferFailures: from minute 6 half the KV reads
// fail; the decode pods count them (vllm:nixl_num_failed_transfers), do
// not observe them in the transfer histogram, and compute those prompts
// themselves, so their first tokens come later. Before minute 6 nothing
// changes, and a link without failures draws no random number: its fleet
// is the one it always was.
func TestDisaggregatedTransferFailures(t *testing.T) {
	base, err := Run(pdConfig(1))
	require.NoError(t, err)
	c := pdConfig(1)
	c.KVLink.Failures = []KVLinkFailure{{From: 6 * time.Minute, To: time.Hour, Share: 0.5}}
	fail, err := Run(c)
	require.NoError(t, err)
	mid := len(base.Pods[1].Scrapes) / 2
	end := len(base.Pods[1].Scrapes) - 1
	for _, pi := range []int{1, 2} {
		bp, fp := base.Pods[pi], fail.Pods[pi]
		assert.Zero(t, bp.Scrapes[end].snaps[0].st.nixlFailed, "no failure on a healthy link")
		assert.Zero(t, fp.Scrapes[mid-1].snaps[0].st.nixlFailed, "no failure before minute 6")
		failed := fp.Scrapes[end].snaps[0].st.nixlFailed - fp.Scrapes[mid+1].snaps[0].st.nixlFailed
		ok, _ := histDelta(fp, hNixlXfer, mid+1, end)
		assert.InDelta(t, 0.5, failed/(failed+ok), 0.05, "share of the reads that failed on %s", fp.Name)
		bn, bs := histDelta(bp, hTTFT, mid+1, end)
		fn, fs := histDelta(fp, hTTFT, mid+1, end)
		assert.Greater(t, fs/fn, 1.2*bs/bn, "decode TTFT on %s: the failed reads' prompts are computed there", fp.Name)
		assert.Equal(t, bp.Scrapes[mid-1].snaps[0].st.counts, fp.Scrapes[mid-1].snaps[0].st.counts, "the same fleet before the failures")
	}
	assert.Regexp(t, `vllm:nixl_num_failed_transfers_total\{[^}]*\} [1-9]`, string(fail.Pods[1].Scrapes[end].VLLM()))
}

func TestRoleConfigErrors(t *testing.T) {
	for name, pods := range map[string][]PodConfig{
		"mixed":        {{Role: RolePrefill}, {Role: RoleDecode}, {}},
		"no decode":    {{Role: RolePrefill}, {Role: RolePrefill}},
		"unknown role": {{Role: RolePrefill}, {Role: "both"}},
		"V0":           {{Role: RolePrefill}, {Role: RoleDecode, Version: VersionV0}},
	} {
		_, err := Run(Config{Duration: time.Minute, Pods: pods})
		assert.Error(t, err, name)
	}
}
