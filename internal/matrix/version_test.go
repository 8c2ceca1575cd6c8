package matrix

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
)

// versionKnown are the matrix cases whose cause an older vLLM cannot
// show, with the verdict the diagnosis gives instead and why.
var versionKnown = map[fleetsim.Version]map[string]struct{ verdict, why string }{
	fleetsim.VersionV0: {
		"admission-deferral": {string(rules.Undetermined), "V0 exposes no vllm:num_requests_waiting_by_reason: deferral is not evaluable"},
		"stale-gauges":       {string(rules.Undetermined), "V0 exposes no HTTP or frontend request counter: frozen gauges cannot be told from a stalled engine, and both are named as candidates"},
		"preemption-thrash":  {"kv-preemption", "V0 exposes no vllm:request_num_preemptions: the same requests preempted again and again cannot be told from KV pressure"},
	},
}

// notOnVersion matches fleetsim's refusal of a case that needs a later
// vLLM (P/D roles, admission limits, data-parallel engines).
var notOnVersion = regexp.MustCompile(`need VersionV1|need DataParallel 1 and VersionV1|VersionV0 has no data-parallel engines`)

// Every matrix case on fleets of the older vLLM generations fleetsim
// simulates (the moderate incident, and each counter-case, on the
// smallest fleet and the first seed): the diagnosis names the cause, or
// says what the generation cannot show (versionKnown). Among the cases,
// on V0: prefix-cache-loss, whose hit rate V0 shows only as a gauge of
// every lookup since the process started (the diagnosis recovers the
// window's rate; the gauge's mean named decode-pressure, at high
// confidence), and spec-decode-acceptance, from V0's own spec-decode
// metrics.
func TestVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("the quick tier runs the matrix on the current generation only")
	}
	smallest := slices.Min(fleetsim.MatrixSizes)
	for _, v := range []fleetsim.Version{fleetsim.VersionV1Early, fleetsim.VersionV0} {
		t.Run(v.String(), func(t *testing.T) {
			var cells []Cell
			for _, c := range Cells(false) {
				if c.Pods == smallest && c.Seed == fleetsim.MatrixSeeds[0] && (!c.Incident() || c.Severity == "moderate") {
					c.Variant.Version = v
					cells = append(cells, c)
				}
			}
			var skipped []string
			for _, r := range RunEach(cells, 0, nil) {
				if r.Err != nil && notOnVersion.MatchString(r.Err.Error()) {
					skipped = append(skipped, r.Case)
					continue
				}
				require.NoError(t, r.Err, r.Name())
				if k, ok := versionKnown[v][r.Case]; ok {
					assert.Equal(t, k.verdict, r.Verdict, "%s: %s", r.Name(), k.why)
					continue
				}
				assert.True(t, r.OK(), "%s: %s, verdict %s (expected %s)", r.Name(), r.Outcome, r.Verdict, r.Expect)
			}
			t.Logf("%d cells; not simulated on %s: %s", len(cells), v, strings.Join(skipped, ", "))
			require.Less(t, len(skipped), len(cells)/2, fmt.Sprintf("most cases run on %s", v))
		})
	}
}
