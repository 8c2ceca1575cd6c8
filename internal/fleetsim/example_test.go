package fleetsim_test

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// A small fleet: two pods for five minutes, one of them running the V0
// engine. The first lines of a vLLM V1 page and of a V0 page show the
// difference in labels.
func ExampleRun() {
	ph := fleetsim.DefaultPhase
	ph.Rate = 8 // requests per second over the fleet
	f, err := fleetsim.Run(fleetsim.Config{
		Seed:     1,
		Duration: 5 * time.Minute,
		Pods:     []fleetsim.PodConfig{{Name: "a"}, {Name: "b", Version: fleetsim.VersionV0}},
		Workload: fleetsim.Workload{Phases: []fleetsim.Phase{ph}},
	})
	if err != nil {
		panic(err)
	}
	for _, p := range f.Pods {
		sc := p.Scrapes[len(p.Scrapes)-1]
		fmt.Println(p.Name, p.Version, len(p.Scrapes), "scrapes, last at", sc.Time.Format(time.TimeOnly))
		s := bufio.NewScanner(bytes.NewReader(sc.VLLM()))
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "vllm:num_requests_running{") {
				fmt.Println(" ", s.Text())
			}
		}
	}
	// Output:
	// a 0.11 20 scrapes, last at 10:04:47
	//   vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 7.0
	// b 0.6-v0 20 scrapes, last at 10:04:46
	//   vllm:num_requests_running{model_name="meta-llama/Llama-3.1-8B-Instruct"} 6.0
}

// Replay runs the same requests under one changed engine setting: the
// controlled experiment of the article. Here fewer concurrent sequences
// shorten the time per output token a little but make requests wait: a
// hypothesis "lower max_num_seqs fixes decode pressure" that the queue
// refutes. Requests include the 5-minute warm-up.
func ExampleReplay() {
	ph := fleetsim.DefaultPhase
	ph.Rate = 4
	ph.Output.Median = 480
	base := fleetsim.Config{Seed: 3, NumPods: 1, Duration: 10 * time.Minute,
		Workload: fleetsim.Workload{Phases: []fleetsim.Phase{ph}}}
	treat := fleetsim.Replay(base, func(e *fleetsim.EngineConfig) { e.MaxNumSeqs = 40 })

	for _, cfg := range []fleetsim.Config{base, treat} {
		f, err := fleetsim.Run(cfg)
		if err != nil {
			panic(err)
		}
		var tpot, queue time.Duration
		n := 0
		for _, r := range f.Requests {
			if r.Status != fleetsim.StatusFinished || r.Arrival < 2*time.Minute || r.OutputTokens < 2 {
				continue
			}
			tpot += (r.Finished - r.FirstToken) / time.Duration(r.OutputTokens-1)
			queue += r.QueueTime()
			n++
		}
		fmt.Printf("max_num_seqs=%d: %d requests, mean TPOT %v, mean queue %v\n",
			f.Pods[0].Engine.MaxNumSeqs, len(f.Requests),
			(tpot / time.Duration(n)).Round(time.Millisecond), (queue / time.Duration(n)).Round(100*time.Millisecond))
	}
	// Output:
	// max_num_seqs=128: 3636 requests, mean TPOT 23ms, mean queue 0s
	// max_num_seqs=40: 3636 requests, mean TPOT 20ms, mean queue 1m16.8s
}

// Scenarios are named fleets for the diagnosis tests.
func ExampleScenarios() {
	for _, s := range fleetsim.Scenarios()[:4] {
		fmt.Printf("%-20s expect %s\n", s.Name, s.Expect)
	}
	// Output:
	// healthy              expect no-incident
	// sustained-overload   expect queue-sustained
	// burst                expect queue-burst
	// long-prompts         expect prefill-long-prompts
}

// BenchmarkRun measures one 8-pod, 60-minute scenario.
func BenchmarkRun(b *testing.B) {
	for _, name := range []string{"healthy", "sustained-overload"} {
		cfg := fleetsim.Scenario(name)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := fleetsim.Run(cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVLLM measures rendering one V1 page.
func BenchmarkVLLM(b *testing.B) {
	cfg := fleetsim.Scenario("healthy")
	cfg.Duration = 2 * time.Minute
	f, err := fleetsim.Run(cfg)
	if err != nil {
		b.Fatal(err)
	}
	sc := f.Pods[0].Scrapes[len(f.Pods[0].Scrapes)-1]
	b.SetBytes(int64(len(sc.VLLM())))
	for b.Loop() {
		_ = sc.VLLM()
	}
}
