package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/whyslow/whyslow/alerts"
)

const alertsExamples = `  whyslow alerts -o whyslow-rules.yml
  whyslow alerts --slo ttft_p95=2s,tpot_p95=80ms --for 15m --rate-window 5m -o whyslow-rules.yml
  whyslow alerts --vllm-version 0.9.2 --by model_name,namespace --baseline-offset 7d
  whyslow alerts --format alertmanager -o whyslow-inhibit.yml
  whyslow alerts --scrape-interval 30s -o whyslow-rules.yml
  promtool check rules whyslow-rules.yml
`

// runAlerts implements "whyslow alerts": write Prometheus recording and
// alerting rules from the decision map.
func runAlerts(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e.stdout, "alerts", "[flags]", alertsExamples)
	def := alerts.DefaultOptions
	slo := fs.String("slo", "", "SLO `TARGETS` the symptom alerts fire on, e.g. ttft_p95=2s,ttft_p99=5s,tpot_p95=80ms,itl_p95=100ms,e2e_p99=30s,error_share=0.01 (else: a rise over the baseline)")
	thresholds := fs.String("thresholds", "", "decision-map `LIMITS` replacing the defaults (see whyslow rules), e.g. rise=1.5,kv_high=0.95")
	by := fs.String("by", strings.Join(def.By, ","), "`LABELS` the fleet expressions keep apart, comma-separated")
	forDur := fs.String("for", model.Duration(def.For).String(), "`DURATION` an alert's condition must hold before it fires")
	rateWindow := fs.String("rate-window", model.Duration(def.RateWindow).String(), "`DURATION` of rate(), increase() and the gauge statistics")
	baseline := fs.String("baseline-offset", model.Duration(def.BaselineOffset).String(), "how far back the baseline lies (`DURATION`, Prometheus syntax such as 1d or 30m)")
	version := fs.String("vllm-version", "", "vLLM `VERSION` whose metric names to use: V0, V1 or a release such as 0.9.2 (default: V1 names, and V0 names where they differ)")
	scrape := fs.String("scrape-interval", model.Duration(def.ScrapeInterval).String(), "the targets' scrape `DURATION`: bursts and the queue's shape are measured per scrape interval")
	format := fs.String("format", "prometheus", "output `FORMAT`: prometheus (the rule file) or alertmanager (its inhibit_rules: a specific alert silences the general one it refines where that adds no other mitigation)")
	output := fs.String("o", "", "write the rule file to `FILE` instead of standard output")
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(paths) > 0 {
		return usagef("alerts takes no PATH")
	}
	if *format != "prometheus" && *format != "alertmanager" {
		return usagef("--format %q: want prometheus or alertmanager", *format)
	}
	opts := def
	if opts.Thresholds, err = parseThresholds(*thresholds); err != nil {
		return usagef("--thresholds: %v", err)
	}
	if opts.SLO, err = parseSLO(*slo); err != nil {
		return usagef("--slo: %v", err)
	}
	opts.By = nil
	for _, l := range strings.Split(*by, ",") {
		if l = strings.TrimSpace(l); l != "" {
			opts.By = append(opts.By, l)
		}
	}
	if len(opts.By) == 0 {
		return usagef("--by: want at least one label, e.g. --by model_name")
	}
	for _, d := range []struct {
		flag, v string
		dst     *time.Duration
	}{{"--for", *forDur, &opts.For}, {"--rate-window", *rateWindow, &opts.RateWindow}, {"--baseline-offset", *baseline, &opts.BaselineOffset}, {"--scrape-interval", *scrape, &opts.ScrapeInterval}} {
		v, err := model.ParseDuration(d.v)
		if err != nil {
			return usagef("%s %q: want a Prometheus duration such as 10m or 1d", d.flag, d.v)
		}
		*d.dst = time.Duration(v)
	}
	if opts.RateWindow <= 0 {
		return usagef("--rate-window must be positive")
	}
	if opts.ScrapeInterval <= 0 {
		return usagef("--scrape-interval must be positive")
	}
	opts.Hold = opts.RateWindow
	opts.VLLMVersion = *version
	rf, err := alerts.Generate(opts)
	if err != nil {
		return usagef("%v", err)
	}
	data, err := rf.YAML()
	if *format == "alertmanager" {
		data, err = rf.AlertmanagerYAML()
	}
	if err != nil {
		return err
	}
	for _, n := range rf.NotExpressible {
		fmt.Fprintf(e.stderr, "whyslow alerts: not expressible in PromQL: %s: %s\n", n.ID, n.Reason)
	}
	for _, n := range rf.Excluded {
		fmt.Fprintf(e.stderr, "whyslow alerts: no alert for hypothesis %s: %s\n", n.ID, n.Reason)
	}
	in := inputFlags{output: *output}
	out, closeOut, err := in.out(e)
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return closeOut(err)
}
