package diagnose_test

import (
	"fmt"
	"log"
	"time"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/snapshot"
)

// A week of a fleet's TTFT p95 and waiting requests, one value per hour,
// as a server's recording rules keep them: the search proposes the hour
// the queue began to grow, which a diagnosis then reads in detail.
func ExampleLocateChange() {
	start := time.Date(2026, 9, 15, 0, 0, 0, 0, time.UTC)
	grid := snapshot.Grid(snapshot.Window{Start: start, End: start.Add(7 * 24 * time.Hour)}, time.Hour)
	ttft := make([]float64, len(grid))
	waiting := make([]float64, len(grid))
	for i := range grid {
		wobble := float64(i%5) / 100 // the daily traffic's small swings
		ttft[i], waiting[i] = 0.30+wobble, 0.5+wobble
		if i >= 130 { // from 2026-09-20T10:00Z
			ttft[i], waiting[i] = 0.90+wobble, 12+wobble
		}
	}
	cp, err := diagnose.LocateChange(grid, []diagnose.FleetSeries{
		{Name: "ttft_p95", Values: ttft},
		{Name: "waiting", Values: waiting},
	}, diagnose.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("change at", cp.Time.Format(time.RFC3339))
	for _, s := range cp.Signals {
		fmt.Printf("%s: %.2f -> %.2f %s\n", s.Series, s.Before, s.After, s.Unit)
	}
	// Output:
	// change at 2026-09-20T10:00:00Z
	// ttft_p95: 0.32 -> 0.92 s
	// waiting: 0.52 -> 12.02 requests
}
