// Experiment judges a controlled, single-variable experiment the way the
// article asks for one: the hypothesis and its falsification conditions
// written first, one variable changed, the same workload replayed in both
// arms, a warm-up excluded, at least three repeats, then adopt or reject.
//
//	go run ./examples/experiment
//	go run ./examples/experiment -format markdown
//
// The hypothesis is kv-preemption ("KV-cache shortage with preemption and
// recompute"), and the plan is the one the decision map proposes for it:
// raise gpu_memory_utilization so that vLLM allocates more KV blocks;
// preemptions should fall by half and E2E p99 by 10%, while TTFT, output
// throughput and errors must not get worse.
//
// The runs come from the repository's simulator (a few seconds): each
// repeat replays one seeded request trace on a 2-pod fleet under
// gpu_memory_utilization 0.6 (baseline) and 0.9 (treatment), and nothing
// else differs. Each run's scrapes are read as an SRE would capture them,
// one /metrics dump per pod and scrape, through a snapshot.Builder; then
// diagnose.JudgeExperiment measures every run after warm-up and judges the
// arms with rules.Judge.
//
// With real runs, read each run's dumps with snapshot.Read and give them
// to JudgeExperiment the same way, or use `whyslow experiment`.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/whyslow/whyslow/diagnose"
	"github.com/whyslow/whyslow/internal/fleetsim"
	"github.com/whyslow/whyslow/rules"
	"github.com/whyslow/whyslow/snapshot"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Settings of the experiment.
const (
	baselineGMU  = 0.6 // gpu_memory_utilization of the baseline arm
	treatmentGMU = 0.9 // and of the treatment arm
	runLength    = 10 * time.Minute
	warmUp       = 2 * time.Minute
)

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("experiment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "text", "output `format`: text, markdown or json")
	runs := fs.Int("runs", rules.MinRuns, "repeats per arm (the plan needs at least 3)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || *runs < 1 || (*format != "text" && *format != "markdown" && *format != "json") {
		fs.Usage()
		return 2
	}
	rep, err := experiment(*runs)
	if err == nil {
		err = write(stdout, rep, *format)
	}
	if err != nil {
		fmt.Fprintln(stderr, "experiment:", err)
		return 1
	}
	return 0
}

// plan returns the decision map's proposed experiment for kv-preemption,
// with the values of this experiment filled in.
func plan() (rules.Plan, error) {
	for _, r := range rules.Map() {
		if r.ID == rules.KVPreemption {
			p := r.Experiment
			p.Change.From = fmt.Sprint(baselineGMU)
			p.Change.To = fmt.Sprint(treatmentGMU)
			return p, nil
		}
	}
	return rules.Plan{}, errors.New("the decision map has no kv-preemption rule")
}

// experiment simulates n repeats of both arms and judges them.
func experiment(n int) (*diagnose.ExperimentReport, error) {
	p, err := plan()
	if err != nil {
		return nil, err
	}
	var baseline, treatment []diagnose.Run
	for i := range n {
		cfg := repeat(i)
		b, err := simulate(fmt.Sprintf("baseline-%d", i+1), cfg)
		if err != nil {
			return nil, err
		}
		// Replay changes the engine setting and nothing else: the same
		// requests arrive at the same times with the same lengths.
		t, err := simulate(fmt.Sprintf("treatment-%d", i+1), fleetsim.Replay(cfg, func(e *fleetsim.EngineConfig) {
			*e = e.WithGPUMemoryUtilization(treatmentGMU)
		}))
		if err != nil {
			return nil, err
		}
		baseline, treatment = append(baseline, b), append(treatment, t)
	}
	return diagnose.JudgeExperiment(p, baseline, treatment, diagnose.ExperimentOptions{WarmUp: warmUp})
}

// repeat returns the baseline configuration of repeat i: its own request
// trace and engine noise, a decode-heavy chat load on a KV cache sized by
// gpu_memory_utilization 0.6.
func repeat(i int) fleetsim.Config {
	ph := fleetsim.DefaultPhase
	ph.Rate = 10
	ph.Output = fleetsim.Dist{Median: 400, Sigma: 0.5, Min: 16}
	ph.MaxTokens = 2048
	return fleetsim.Config{
		Seed:      uint64(1 + i),
		TraceSeed: uint64(100 + i),
		NumPods:   2,
		Duration:  runLength,
		Engine:    fleetsim.DefaultEngine.WithGPUMemoryUtilization(baselineGMU),
		Workload:  fleetsim.Workload{Phases: []fleetsim.Phase{ph}},
	}
}

// simulate runs one configuration and reads its scrapes as evidence: one
// dump per pod and scrape, named DIR/<pod>/<time>.prom as a capture
// script would save them, plus the GPU exporter's page when there is one.
func simulate(name string, cfg fleetsim.Config) (diagnose.Run, error) {
	fleet, err := fleetsim.Run(cfg)
	if err != nil {
		return diagnose.Run{}, fmt.Errorf("%s: %w", name, err)
	}
	b := snapshot.NewBuilder(snapshot.Options{})
	for _, pod := range fleet.Pods {
		for _, sc := range pod.Scrapes {
			ts := sc.Time.UTC().Format("2006-01-02T15-04-05Z")
			if err := b.AddDump(pod.Name+"/"+ts+".prom", sc.VLLM(), sc.Time); err != nil {
				return diagnose.Run{}, fmt.Errorf("%s: %w", name, err)
			}
			if page := sc.DCGM(); page != nil {
				if err := b.AddDump(pod.Name+"/dcgm-"+ts+".prom", page, sc.Time); err != nil {
					return diagnose.Run{}, fmt.Errorf("%s: %w", name, err)
				}
			}
		}
	}
	return diagnose.Run{Name: name, Evidence: b.Evidence()}, nil
}

// write prints the judgement.
func write(w io.Writer, rep *diagnose.ExperimentReport, format string) error {
	var err error
	switch format {
	case "markdown":
		_, err = io.WriteString(w, rep.Markdown())
	case "json":
		err = writeJSON(w, rep)
	default:
		_, err = io.WriteString(w, rep.String())
	}
	return err
}
