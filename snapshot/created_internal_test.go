package snapshot

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCreatedFamilies(t *testing.T) {
	om := `# TYPE req counter
req_total{a="1"} 3 1700000000
req_created{a="1"} 1690000000 1700000000
# TYPE lat histogram
lat_bucket{le="+Inf"} 1
lat_count 1
lat_sum 2
lat_created 1690000000
# TYPE gc counter
gc_total{generation="0"} 7
# TYPE tricky gauge
tricky{x="not_created"} 1
not_a_created_family 1
# HELP x_created a comment, not a sample
# EOF
`
	got := createdFamilies([]byte(om))
	assert.Equal(t, map[string]bool{"req": true, "lat": true}, got)
}
