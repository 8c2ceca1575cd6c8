package rules_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/rules"
)

func TestMissingKinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kind error
		text string
	}{
		{"no source", rules.NoSource("no %s in the evidence", "vllm:num_preemptions_total"), rules.ErrNoSource, "no vllm:num_preemptions_total in the evidence"},
		{"too little", rules.TooLittle("fewer than %d scrape intervals", 8), rules.ErrTooLittle, "fewer than 8 scrape intervals"},
		{"wrapped", fmt.Errorf("ttft_p95 over the incident window: %w", rules.TooLittle("no observation")), rules.ErrTooLittle, "ttft_p95 over the incident window: no observation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := rules.MissingFact(tc.err)
			assert.False(t, f.Known())
			assert.ErrorIs(t, f.Missing, tc.kind)
			for _, other := range []error{rules.ErrNoSource, rules.ErrTooLittle} {
				if other != tc.kind {
					assert.NotErrorIs(t, f.Missing, other)
				}
			}
			// The kind is not written: the JSON keeps the reason's text,
			// which reads back as a reason of no kind.
			b, err := json.Marshal(f)
			require.NoError(t, err)
			var got rules.Fact
			require.NoError(t, json.Unmarshal(b, &got))
			assert.EqualError(t, got.Missing, tc.text)
			assert.False(t, errors.Is(got.Missing, tc.kind))
		})
	}
}

func TestMissingJSON(t *testing.T) {
	m := rules.Missing{Fact: rules.TTFTP99, Err: rules.TooLittle("only %d observations in the incident window, need >= %d", 60, 100)}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	assert.JSONEq(t, `{"fact": "ttft_p99", "reason": "only 60 observations in the incident window, need >= 100"}`, string(b))
	var got rules.Missing
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, m.String(), got.String())
	assert.Equal(t, "ttft_p99: only 60 observations in the incident window, need >= 100", got.String())
}

func TestMissingWithoutErr(t *testing.T) {
	m := rules.Missing{Fact: rules.TTFTP95}
	assert.Equal(t, "ttft_p95: ", m.String())
	b, err := json.Marshal(m)
	require.NoError(t, err)
	assert.JSONEq(t, `{"fact": "ttft_p95", "reason": ""}`, string(b))
	var got rules.Missing
	require.NoError(t, json.Unmarshal(b, &got))
	assert.NoError(t, got.Err)
}
