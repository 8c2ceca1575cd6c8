package jsondiff

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

func TestDiff(t *testing.T) {
	a := decode(t, `{"v": "x", "n": 1, "list": [{"id": "ttft", "p": 0.3}, 2], "only_a": true}`)
	b := decode(t, `{"v": "x", "n": 1.0000000001, "list": [{"id": "ttft", "p": 0.4}, 2, 3], "m": {}}`)
	assert.Empty(t, Diff(a, a, nil))
	assert.Equal(t, []string{
		".list: 2 elements, 3 elements",
		".list[0 ttft].p: 0.3, 0.4",
		".m: <nil>, map[]",
		".n: 1, 1.0000000001",
		".only_a: true, <nil>",
	}, Diff(a, b, nil))
	near := func(x, y any) bool {
		if x, ok := x.(float64); ok {
			y, ok := y.(float64)
			return ok && math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
		}
		return x == y
	}
	assert.NotContains(t, Diff(a, b, near), ".n: 1, 1.0000000001")
	// An object against a scalar, an array against an object.
	assert.Equal(t, []string{": map[], 1"}, Diff(decode(t, `{}`), 1.0, nil))
	assert.Equal(t, []string{": [], map[]"}, Diff(decode(t, `[]`), decode(t, `{}`), nil))
	assert.Equal(t, []string{": 1, []"}, Diff(1.0, decode(t, `[]`), nil))
	many, other := map[string]any{}, map[string]any{}
	for i := range 25 {
		many[string(rune('a'+i))] = 1.0
	}
	d := Diff(many, other, nil)
	assert.Len(t, d, 21)
	assert.Equal(t, ".a: 1, <nil>", d[0])
	assert.Equal(t, "... and 5 more", d[20])
	long := string(make([]byte, 300))
	assert.Len(t, Diff(long, "", nil)[0], len(": ")+200+len("...")+len(", "))
}
