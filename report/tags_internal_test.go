package report

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"
)

// culpritFleet is a report whose verdict's evidence names vllm-1 (its
// share of arrivals), with a per-replica table of three replicas.
func culpritFleet() *Report {
	r := fleetOf(0.9, 0.3, 2.4, 0.3)
	r.Verdict = rules.Verdict(rules.ReplicaHotspot)
	r.Inputs.Replicas = []string{"vllm-0", "vllm-1", "vllm-2"}
	r.Hypotheses = []rules.Finding{{ID: rules.ReplicaHotspot, Status: rules.Supported, Evidence: []rules.Evidence{
		{ID: rules.ReplicaLoadShareMax, Fact: rules.Fact{Incident: rules.Measurement{Value: 2.4, Count: math.NaN()}, Source: "vllm-1: vllm:request_success_total", Replica: "vllm-1"}, Text: "replica_load_share_max 2.4x"},
	}}}
	return r
}

// replicasTable returns the per-replica table of a document.
func replicasTable(t *testing.T, d *Document) *Table {
	t.Helper()
	for _, b := range d.Blocks {
		if b.Kind == BlockTable && b.Class == "replicas" {
			return b.Table
		}
	}
	require.Fail(t, "no per-replica table")
	return nil
}

// The row of the replica the verdict names is tagged for the HTML form;
// the tag leaves text and Markdown as they were.
func TestReplicaTableTagsTheCulprit(t *testing.T) {
	r := culpritFleet()
	require.NotNil(t, r.NamedCulprit())
	d := r.Layout(LayoutOptions{})
	tab := replicasTable(t, d)
	require.Len(t, tab.Rows, 3)
	assert.Equal(t, []string{"", TagCulprit, ""}, tab.Tags)
	assert.Equal(t, "vllm-1", tab.Rows[1][0])

	var text, md bytes.Buffer
	require.NoError(t, d.WriteText(&text))
	require.NoError(t, d.WriteMarkdown(&md))
	tab.Tags = nil
	var text0, md0 bytes.Buffer
	require.NoError(t, d.WriteText(&text0))
	require.NoError(t, d.WriteMarkdown(&md0))
	assert.Equal(t, text0.String(), text.String())
	assert.Equal(t, md0.String(), md.String())

	// No culprit named: no tags.
	r.Hypotheses = nil
	r.Verdict = rules.Undetermined
	assert.Nil(t, replicasTable(t, r.Layout(LayoutOptions{})).Tags)
}
