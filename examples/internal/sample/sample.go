// Package sample builds the sample evidence of the examples: a scenario of
// the repository's fleet simulator (internal/fleetsim), shrunk to a size
// that can be committed and embedded, written as one gzip-compressed
// OpenMetrics 1.0 document holding every scrape of every pod (the form
// `promtool tsdb create-blocks-from openmetrics` reads).
//
// The committed file examples/postmortem/evidence/long-prompts.om.gz is
// Dump(Default); `go generate ./examples/postmortem` writes it again.
package sample

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// Default is the scenario of the committed sample evidence.
const Default = "long-prompts"

// Pods and ScrapeInterval are the size of a sample fleet: half the pods of
// a fleetsim scenario, each receiving the same load as in the scenario, and
// scraped half as often.
const (
	Pods           = 4
	ScrapeInterval = 30 * time.Second
)

// Config returns the configuration of the named fleetsim scenario at the
// sample's size. Scenarios that list their pods one by one (restart,
// mixed-versions) keep all of them; the others run Pods pods with the
// fleet arrival rates, bursts and routing weights scaled so that each pod
// sees the load it sees in the full scenario. The result depends only on
// name.
func Config(name string) (fleetsim.Config, error) {
	spec, ok := fleetsim.LookupScenario(name)
	if !ok {
		return fleetsim.Config{}, fmt.Errorf("sample: unknown scenario %q (known: %s)",
			name, strings.Join(fleetsim.ScenarioNames(), ", "))
	}
	cfg := spec.Config
	cfg.ScrapeInterval = ScrapeInterval
	if len(cfg.Pods) > 0 {
		return cfg, nil
	}
	full := cfg.NumPods
	if full == 0 {
		full = 8 // fleetsim's default
	}
	if full <= Pods {
		return cfg, nil
	}
	scale := float64(Pods) / float64(full)
	cfg.NumPods = Pods
	w := cfg.Workload
	w.Phases = slices.Clone(w.Phases)
	for i := range w.Phases {
		p := &w.Phases[i]
		p.Rate *= scale
		if len(p.Weights) > Pods {
			p.Weights = slices.Clone(p.Weights[:Pods])
		}
	}
	w.Bursts = slices.Clone(w.Bursts)
	for i := range w.Bursts {
		w.Bursts[i].Rate *= scale
	}
	cfg.Workload = w
	return cfg, nil
}

// Expect returns the diagnosis the named scenario is built to produce (see
// fleetsim.ScenarioSpec.Expect), or "" for an unknown name.
func Expect(name string) string {
	spec, _ := fleetsim.LookupScenario(name)
	return spec.Expect
}

// FileName returns the name of the sample file of the named scenario,
// e.g. "long-prompts.om.gz".
func FileName(name string) string { return name + ".om.gz" }

// Dump simulates the named scenario at the sample's size (see Config) and
// returns it as one gzip-compressed OpenMetrics document with timestamps.
// The output depends only on name and on the simulator's code.
func Dump(name string) ([]byte, error) {
	cfg, err := Config(name)
	if err != nil {
		return nil, err
	}
	fleet, err := fleetsim.Run(cfg)
	if err != nil {
		return nil, fmt.Errorf("sample: simulating %s: %w", name, err)
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	// The header keeps a zero ModTime, so that the output is reproducible.
	zw.Name = strings.TrimSuffix(FileName(name), ".gz")
	if err := fleet.WriteOpenMetrics(zw, true); err != nil {
		return nil, fmt.Errorf("sample: writing %s: %w", name, err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
