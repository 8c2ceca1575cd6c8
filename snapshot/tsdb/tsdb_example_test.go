package tsdb_test

import (
	"context"
	"fmt"
	"time"

	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/tsdb"
)

// ExampleRead reads a TSDB block written by promtool: a classic
// histogram stored as _bucket, _sum and _count series comes back assembled.
func ExampleRead() {
	dir := "testdata/tsdb-promtool"
	fmt.Println("is TSDB:", snapshot.IsTSDB(dir))

	start := time.Date(2025, 9, 22, 10, 0, 0, 0, time.UTC)
	ev, err := tsdb.Read(context.Background(), dir, snapshot.Options{
		Start:   start,
		End:     start.Add(time.Minute), // both ends inclusive
		Metrics: []string{"vllm:time_to_first_token_seconds"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tg := range ev.Targets {
		fmt.Printf("target %s (from %s): %d scrapes, first %s by %s\n",
			tg.Name, tg.NameFrom, len(tg.Scrapes), tg.Scrapes[0].Time.Format(time.RFC3339), tg.Scrapes[0].TimeFrom)
		for _, name := range tg.FamilyNames() {
			f := tg.Family(name)
			hs := f.Histograms[0]
			fmt.Printf("%s: %s (inferred %t), bounds %v, last counts %v, count %g\n",
				name, f.Type, f.TypeInferred, hs.Bounds, hs.At(hs.Len()-1).Counts, hs.Count[hs.Len()-1])
		}
	}
	fmt.Println("partial:", ev.Partial())
	// Output:
	// is TSDB: true
	// target vllm-0 (from pod): 5 scrapes, first 2025-09-22T10:00:00Z by tsdb
	// vllm:time_to_first_token_seconds: histogram (inferred true), bounds [0.1 0.5 +Inf], last counts [4 8 12], count 12
	// partial: false
}
