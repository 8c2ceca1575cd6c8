package catalog_test

import (
	"math"
	"slices"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
)

func ver(t testing.TB, s string) catalog.Version {
	t.Helper()
	v, err := catalog.ParseVersion(s)
	require.NoError(t, err)
	return v
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    catalog.Version
		wantErr bool
	}{
		{in: "0.10", want: catalog.Version{Minor: 10}},
		{in: "0.9.2", want: catalog.Version{Minor: 9, Patch: 2}},
		{in: "v0.11.0", want: catalog.Version{Minor: 11}},
		{in: " 1.2.3 ", want: catalog.Version{Major: 1, Minor: 2, Patch: 3}},
		{in: "0", wantErr: true},
		{in: "0.1.2.3", wantErr: true},
		{in: "0.x", wantErr: true},
		{in: "0.-1", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := catalog.ParseVersion(tt.in)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestVersionRangeString(t *testing.T) {
	v := func(s string) catalog.Version { return ver(t, s) }
	tests := []struct {
		r    catalog.VersionRange
		want string
	}{
		{catalog.VersionRange{}, "unknown"},
		{catalog.VersionRange{Engine: catalog.EngineV1}, "any (V1)"},
		{catalog.Since(catalog.EngineV1, v("0.11")), ">= 0.11 (V1)"},
		{catalog.Since(catalog.EngineV1, v("0.9.2")), ">= 0.9.2 (V1)"},
		{catalog.Between(catalog.EngineV1, v("0.10"), v("0.10")), "0.10.x (V1)"},
		{catalog.Between(catalog.EngineV1, v("0.9.2"), v("0.10")), "0.9.2–0.10.x (V1)"},
		{catalog.Between(catalog.EngineV0, v("0.4"), v("0.5")), "0.4–0.5.x (V0)"},
		{catalog.VersionRange{Engine: catalog.EngineV0, Min: v("0.6"), Max: v("0.6.4")}, "0.6.0–0.6.3 (V0)"},
		{catalog.VersionRange{Engine: catalog.EngineV0, Min: v("0.4"), Max: v("0.6.4")}, "0.4–0.6.3 (V0)"},
		{catalog.VersionRange{Max: v("0.11")}, "<= 0.10.x"},
		{catalog.VersionRange{Max: v("1.0")}, "<= 0.x"},
		{catalog.VersionRange{Min: v("0.11"), Max: v("0.11")}, "none"},
		{catalog.VersionRange{Engine: catalog.EngineNotVLLM}, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.r.String())
		})
	}
}

func TestVersionRangeIntersectHull(t *testing.T) {
	v := func(s string) catalog.Version { return ver(t, s) }
	v1from := func(s string) catalog.VersionRange { return catalog.Since(catalog.EngineV1, v(s)) }
	upTo := func(s string) catalog.VersionRange { return catalog.VersionRange{Max: v(s)} }

	assert.Equal(t, "0.9.2–0.10.x (V1)", v1from("0.9.2").Intersect(upTo("0.11")).String())
	assert.Equal(t, ">= 0.11 (V1)", catalog.VersionRange{}.Intersect(v1from("0.11")).String())
	assert.True(t, v1from("0.11").Intersect(upTo("0.11")).Empty())
	assert.True(t, v1from("0.8").Intersect(catalog.Since(catalog.EngineV0, v("0.3"))).Empty(), "V0 and V1 never meet")

	assert.Equal(t, ">= 0.8", v1from("0.8").Hull(catalog.Since(catalog.EngineV0, v("0.9"))).String(), "engines differ: unknown")
	assert.Equal(t, "0.3–0.10.x (V0)", catalog.Between(catalog.EngineV0, v("0.3"), v("0.6")).
		Hull(catalog.Between(catalog.EngineV0, v("0.6.4"), v("0.10"))).String())
	empty := catalog.VersionRange{Min: v("0.5"), Max: v("0.5")}
	assert.Equal(t, v1from("0.8"), empty.Hull(v1from("0.8")))
	assert.Equal(t, v1from("0.8"), v1from("0.8").Hull(empty))

	r := catalog.Between(catalog.EngineV1, v("0.10"), v("0.10"))
	assert.True(t, r.Contains(catalog.EngineV1, v("0.10.2")))
	assert.True(t, r.Contains(catalog.EngineUnknown, v("0.10.0")))
	assert.False(t, r.Contains(catalog.EngineV0, v("0.10.2")))
	assert.False(t, r.Contains(catalog.EngineV1, v("0.11.0")))
	assert.False(t, r.Contains(catalog.EngineV1, v("0.9.9")))
}

// FuzzVersionRange checks the algebra of ranges on random bounds:
// Intersect lies in both operands, Hull holds both, Contains agrees.
func FuzzVersionRange(f *testing.F) {
	f.Add(uint8(1), uint8(3), uint8(0), uint8(9), uint8(1), uint8(0), uint8(11), uint8(2), uint8(10), uint8(3))
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), uint8(2), uint8(8), uint8(4), uint8(0), uint8(0), uint8(5))
	f.Fuzz(func(t *testing.T, e1, min1, p1, max1, e2, min2, p2, max2, probeMinor, probePatch uint8) {
		mk := func(e, mn, p, mx uint8) catalog.VersionRange {
			r := catalog.VersionRange{Engine: catalog.Engine(e % 3)}
			if mn%16 != 0 {
				r.Min = catalog.Version{Minor: int(mn % 16), Patch: int(p % 4)}
			}
			if mx%16 != 0 {
				r.Max = catalog.Version{Minor: int(mx % 16)}
			}
			return r
		}
		a, b := mk(e1, min1, p1, max1), mk(e2, min2, p2, max2)
		in, hull := a.Intersect(b), a.Hull(b)
		probe := catalog.Version{Minor: int(probeMinor % 17), Patch: int(probePatch % 5)}
		for _, e := range []catalog.Engine{catalog.EngineV0, catalog.EngineV1} {
			inA, inB := a.Contains(e, probe), b.Contains(e, probe)
			if in.Contains(e, probe) != (inA && inB) {
				t.Fatalf("%v ∩ %v = %v: Contains(%v %v) wrong", a, b, in, e, probe)
			}
			if (inA || inB) && !hull.Contains(e, probe) {
				t.Fatalf("%v ∪ %v ⊆ %v fails at %v %v", a, b, hull, e, probe)
			}
		}
		if in.Empty() != (in.String() == "none") {
			t.Fatalf("Empty and String disagree for %v", in)
		}
	})
}

func TestHistory(t *testing.T) {
	h := catalog.History()
	require.NotEmpty(t, h)
	type key struct {
		metric string
		engine catalog.Engine
	}
	names := map[key]int{}
	for _, e := range h {
		assert.True(t, model.LegacyValidation.IsValidMetricName(e.Metric), e.Metric)
		assert.False(t, e.Versions.Empty(), "%s: empty range", e)
		assert.NotEqual(t, catalog.EngineNotVLLM, e.Versions.Engine, e.Metric)
		if e.Bounds != nil {
			assert.True(t, slices.IsSorted(e.Bounds), "%s: bounds ascending", e)
			assert.False(t, math.IsInf(e.Bounds[len(e.Bounds)-1], 1), "%s: bounds are finite", e)
			continue
		}
		names[key{e.Metric, e.Versions.Engine}]++
	}
	for k, n := range names {
		assert.Equal(t, 1, n, "one name era per metric and engine: %v", k)
	}
	// Every layout era belongs to a known name.
	for _, e := range h {
		if e.Bounds != nil {
			assert.True(t, slices.ContainsFunc(h, func(x catalog.Era) bool { return x.Bounds == nil && x.Metric == e.Metric }), e.Metric)
		}
	}
	// Every vllm: candidate of the catalog has a history.
	for _, s := range catalog.Default().Signals() {
		for _, c := range s.Candidates {
			if len(c.Metric) > 5 && c.Metric[:5] == "vllm:" {
				assert.NotEmpty(t, c.Versions, "%s: %s has no history", s.ID, c.Metric)
			}
		}
	}
	// Names of unmerged pull requests are not listed as shipped.
	for _, e := range h {
		assert.NotContains(t, []string{"vllm:request_priority", "vllm:scheduler_policy_info"}, e.Metric)
	}
	// History returns fresh slices.
	h[0].Metric = "changed"
	if h[len(h)-1].Bounds != nil {
		h[len(h)-1].Bounds[0] = -1
	}
	h2 := catalog.History()
	assert.NotEqual(t, "changed", h2[0].Metric)
	assert.NotEqual(t, -1.0, h2[len(h2)-1].Bounds[0])
}

// TestHistoryDatesOfRecentNames pins the first releases of the names added
// after 0.10 to what docs/inputs.md ("Where each date comes from") derives
// from vLLM's pull requests and release docs: a lower bound, Unverified
// unless the window is one or two releases.
func TestHistoryDatesOfRecentNames(t *testing.T) {
	tests := []struct {
		metric string
		want   string
		conf   catalog.Confidence
	}{
		{metric: "vllm:num_requests_waiting_by_reason", want: ">= 0.17 (V1)", conf: catalog.Unverified},
		{metric: "vllm:admission_rejections_total", want: ">= 0.31 (V1)", conf: catalog.Unverified},
		{metric: "vllm:prompt_tokens_by_source_total", want: ">= 0.15 (V1)", conf: catalog.Unverified},
		{metric: "vllm:prompt_tokens_cached_total", want: ">= 0.15 (V1)", conf: catalog.Unverified},
		{metric: "vllm:request_num_preemptions", want: ">= 0.29 (V1)", conf: catalog.Approximate},
		{metric: "vllm:request_prefill_kv_computed_tokens", want: ">= 0.13 (V1)", conf: catalog.Unverified},
		{metric: "vllm:engine_sleep_state", want: ">= 0.11.1 (V1)", conf: catalog.Unverified},
		{metric: "vllm:spec_decode_num_drafts_total", want: ">= 0.9 (V1)", conf: catalog.Unverified},
		{metric: "vllm:spec_decode_num_accepted_tokens_per_pos_total", want: ">= 0.9 (V1)", conf: catalog.Unverified},
		{metric: "vllm:nixl_xfer_time_seconds", want: ">= 0.11 (V1)", conf: catalog.Unverified},
		{metric: "vllm:nixl_num_failed_transfers_total", want: ">= 0.11 (V1)", conf: catalog.Unverified},
		{metric: "vllm:nixl_num_failed_notifications_total", want: ">= 0.11 (V1)", conf: catalog.Unverified},
		{metric: "vllm:nixl_num_kv_expired_reqs_total", want: ">= 0.13 (V1)", conf: catalog.Unverified},
	}
	h := catalog.History()
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			i := slices.IndexFunc(h, func(e catalog.Era) bool {
				return e.Metric == tt.metric && e.Bounds == nil && e.Versions.Engine == catalog.EngineV1
			})
			require.GreaterOrEqual(t, i, 0, "no V1 name era")
			assert.Equal(t, tt.want, h[i].Versions.String())
			assert.Equal(t, tt.conf, h[i].Confidence)
			assert.False(t, h[i].Default, "opt-in or newer than every dated capture: absence is no evidence")
		})
	}
}

func TestEngineConfidenceStrings(t *testing.T) {
	assert.Equal(t, "V0", catalog.EngineV0.String())
	assert.Equal(t, "not vLLM", catalog.EngineNotVLLM.String())
	assert.Equal(t, "Engine(7)", catalog.Engine(7).String())
	assert.Equal(t, "approximate", catalog.Approximate.String())
	assert.Equal(t, "Confidence(5)", catalog.Confidence(5).String())
	assert.Equal(t, "0.9.2", ver(t, "0.9.2").String())
	assert.Equal(t, -1, ver(t, "0.9.2").Compare(ver(t, "0.10")))
	assert.Equal(t, 1, ver(t, "1.0").Compare(ver(t, "0.99.9")))
	assert.Equal(t, 0, ver(t, "0.10").Compare(ver(t, "0.10.0")))
}
