package diagnose_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

// A fleet of four vLLM pods is overloaded from 10:15: the arrival rate
// rises from 16 to 60 requests per second. Diagnose finds when the
// incident started, compares it with the time before, and names the
// hypothesis to check first.
func ExampleDiagnose() {
	// Simulate the fleet and preserve its /metrics dumps, as an SRE would
	// before restarting the pods.
	phase := func(start time.Duration, rate float64) fleetsim.Phase {
		p := fleetsim.DefaultPhase
		p.Start, p.Rate = start, rate
		return p
	}
	fleet, err := fleetsim.Run(fleetsim.Config{
		Seed: 1, Duration: 30 * time.Minute, NumPods: 4,
		Workload: fleetsim.Workload{Phases: []fleetsim.Phase{phase(0, 16), phase(15*time.Minute, 60)}},
	})
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "whyslow-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := fleet.WriteDumps(dir, fleetsim.DumpOptions{}); err != nil {
		log.Fatal(err)
	}

	// Read the evidence and diagnose it.
	ev, err := snapshot.Read(context.Background(), []string{dir}, snapshot.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rep, err := diagnose.Diagnose(ev, diagnose.Options{})
	if err != nil {
		log.Fatal(err)
	}

	fmt.Println("verdict:", rep.Verdict)
	fmt.Println("incident from", rep.Windows.Incident.From, "at", rep.Windows.Incident.Start.Format(time.TimeOnly))
	ttft := rep.Facts[rules.TTFTP95]
	fmt.Printf("TTFT p95 %.0f s over %.0fk requests (baseline %.1f s)\n", float64(ttft.Incident.Value), float64(ttft.Incident.Count)/1000, float64(ttft.Baseline.Value))
	fmt.Println("first hypothesis:", rep.Hypotheses[0].ID, rep.Hypotheses[0].Status)
	// Output:
	// verdict: queue-sustained
	// incident from change-point at 10:15:00
	// TTFT p95 590 s over 35k requests (baseline 0.2 s)
	// first hypothesis: queue-sustained supported
}
