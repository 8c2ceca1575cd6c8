package snapshot_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/whyslow/whyslow/snapshot"
)

func TestSeverityText(t *testing.T) {
	for _, tt := range []struct {
		sev  snapshot.Severity
		json string
	}{
		{snapshot.SeverityWarning, `"warning"`},
		{snapshot.SeverityError, `"error"`},
		{snapshot.SeverityInfo, `"info"`},
	} {
		b, err := json.Marshal(tt.sev)
		require.NoError(t, err)
		assert.Equal(t, tt.json, string(b))
		var back snapshot.Severity
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, tt.sev, back)
	}
	var s snapshot.Severity
	assert.ErrorContains(t, json.Unmarshal([]byte(`"fatal"`), &s), `severity "fatal" is not warning, error or info`)
	assert.Error(t, json.Unmarshal([]byte(`1`), &s), "a number is not a severity")
}
