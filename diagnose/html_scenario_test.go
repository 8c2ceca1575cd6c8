package diagnose_test

import (
	"fmt"
	"html/template"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/internal/reportfixture"
	"github.com/whyslow/whyslow/rules"
)

// On the hot-replica scenario the HTML marks the replica the verdict
// names in the per-replica table and draws its TTFT p95 beside the
// fleet's; the prefill p95, in the histogram's first bucket, is drawn as
// the bound the before/after table prints, from the same numbers.
func TestWriteHTMLHotReplica(t *testing.T) {
	spec, ok := fleetsim.LookupScenario("hot-replica")
	require.True(t, ok)
	rep := scenarioReport(t, spec)
	c := rep.NamedCulprit()
	require.NotNil(t, c, factsTable(rep))
	require.Equal(t, "replica", c.Kind)
	html := reportfixture.HTML(t, rep)

	assert.Contains(t, html, `<tr class="culprit"><td>`+c.Name+` <span class="tag">culprit</span></td>`)
	assert.Equal(t, 1, strings.Count(html, `<span class="tag">culprit</span>`))
	assert.Contains(t, reportfixture.Legend(t, html, "TTFT p95"), c.Name+" (culprit)</li>")

	// The incident window's prefill p95 is a bound in the table ...
	q, ok := rep.Quantile(catalog.SignalPrefillTime, 0.95)
	require.True(t, ok)
	op, bound := q.Bound()
	require.Equal(t, "<=", op, "the scenario's prefill p95 lies in the first bucket")
	cell := template.HTMLEscapeString(op + " " + rules.UnitSeconds.Format(bound))
	assert.Contains(t, html, `<td>prefill_time</td><td class="num">`+cell+`</td>`)
	// ... and so is every interval's that lies in the first bucket: drawn
	// at the bound, not at the interpolated value.
	n := 0
	for _, tl := range rep.Timelines {
		if tl.Signal != "prefill_time" || tl.Replica != "" {
			continue
		}
		for _, p := range tl.Points {
			if pop, pv := p.Bound(); pop == "<=" {
				n++
				assert.Equal(t, bound, pv, "the bucket edge the table prints")
				assert.Less(t, float64(p.Value), pv, "the interpolated value is below it")
			}
		}
	}
	require.Positive(t, n)
	assert.Contains(t, reportfixture.Legend(t, html, "prefill time p95"), fmt.Sprintf("fleet: %s (%d intervals; p95 in the first bucket", cell, n))
}
