package rules

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Thresholds are the tunable limits of the decision map. Start from
// DefaultThresholds and change single fields; the zero value is not
// useful.
//
// Ratios compare the incident value with the baseline value of the same
// fact ("rises" means incident >= Rise x baseline). Absolute limits are
// in the fact's unit.
type Thresholds struct {
	// Rise is the practical minimum: the multiple of the baseline at which
	// a signal beyond noise counts as up (default 1.2, +20%: smaller
	// latency changes are rarely worth an incident). A change must be
	// both beyond noise (see Effect) and at least Rise to count; no
	// ratio decides alone. It is also the lower edge of the mild grade.
	Rise float64
	// SeverityModerate and SeveritySevere are the multiples of the
	// baseline at which a change beyond noise is graded moderate (default
	// 1.4, +40%) and severe (default 2x).
	SeverityModerate, SeveritySevere float64
	// MeanConfirm is the least ratio of the exact mean (from _sum and
	// _count) that confirms a latency quantile's rise when the rise stays
	// within the resolution of the buckets (incident lower bound not above
	// the baseline upper bound): interpolation inside one coarse bucket can
	// double a p95 while the requests barely changed (default 1.1).
	MeanConfirm float64
	// SamplingZ is how many standard errors of sampling a histogram
	// quantile's change must reach (Fact.SamplingZ) to count: below it,
	// the few requests in a tail could have drawn the change by luck
	// (default 2.576, the two-sided 99% of the noise bounds).
	SamplingZ float64
	// TailShape is how many times more the p99 must have moved than the
	// p50 (ratio of their ratios) for a rise to be "only some requests
	// slow" when the median moved too (default 1.5).
	TailShape float64
	// Steady is the multiple within which a signal counts as unchanged:
	// within [1/Steady, Steady] of the baseline, e.g. the article's queue
	// time p95 120ms -> 130ms.
	Steady float64
	// Accumulating is the waiting-queue slope (requests/s, fleet sum) at
	// and above which the queue accumulates rather than spikes: 0.01/s is
	// 18 more waiting requests over a 30-minute window.
	Accumulating float64
	// Burst is the peak-to-mean ratio of short-interval arrivals (or
	// waiting) at and above which the window holds bursts: a 10 s burst
	// hides in a 5 min mean.
	Burst float64
	// Dispersion is the index of dispersion of arrivals per scrape
	// interval (variance / mean; 1 for steady Poisson arrivals) at and
	// above which arrivals come in bursts, when it also rose beyond noise
	// (default 2).
	Dispersion float64
	// DispersionDetrended is the index of dispersion of arrivals per
	// scrape interval around their local trend
	// (arrival_dispersion_detrended; 1 for Poisson arrivals whatever
	// their trend) at and above which arrivals come in bursts, when it
	// also rose beyond noise (default 2: bursts carry as much variance as
	// the arrivals' own randomness).
	DispersionDetrended float64
	// DrainedShare is the share (0..1) of the queue's mass in episodes
	// that drained within the window (waiting_drained_share) below which a
	// queue whose slope is at least Accumulating builds steadily
	// (sustained overload) rather than spiking and draining (default 0.5:
	// most of the queue never drained).
	DrainedShare float64
	// BacklogSpike is the ratio of the engines' backlog (waiting +
	// running) to its local level (backlog_spike) at and above which a
	// burst filled the batch, when it also rose from the baseline
	// (default 2: a burst as large as the load the engines already hold).
	BacklogSpike float64
	// QueueMin is the mean number of waiting requests (fleet sum) at and
	// above which a queue exists at all.
	QueueMin float64
	// ArrivalExcess is the arrival/completion rate ratio at and above
	// which arrivals exceed what the fleet completes.
	ArrivalExcess float64
	// MinorityShare is the largest share of the rise of the fleet's mean
	// TTFT that the median replica's own rise may cover for the rise to be
	// a minority's (default 0.2): a cause on a few replicas leaves the
	// median replica where it was (share near 0), arrivals the router
	// spreads move it with the fleet (share near 1).
	MinorityShare float64
	// Explains is the least share of the TTFT p95 increase that a phase
	// (queue or prefill time p95) increase must cover to "explain" it.
	Explains float64
	// NearCapacity is the fraction of max_num_seqs at and above which the
	// running sequences count as saturated.
	NearCapacity float64
	// KVHigh is the KV-cache usage (0..1) at and above which KV space is
	// under pressure. High KV alone is not an incident.
	KVHigh float64
	// Preemption is the preemption rate (1/s) above which preemptions
	// count as occurring; the default 0 means any preemption in the window.
	Preemption float64
	// PreemptionShare is the number of preemptions per finished request
	// at and above which recompute slows the fleet (default 0.01): a few
	// preemptions in a busy window are not the cause of anything.
	PreemptionShare float64
	// PreemptionStorm is the number of preemptions per finished request
	// at and above which the preemptions are the story whatever else
	// changed (default 0.05); below it, answers that got longer explain
	// the preemptions (see kv-preemption's ExplainedBy).
	PreemptionStorm float64
	// GPULow is the GPU utilisation (0..1) below which a GPU with no
	// queue counts as lightly used (the low-traffic counter-case).
	GPULow float64
	// GPUSaturated is the GPU utilisation (0..1) that a GPU reaches when
	// work waits for it (default 0.8): where requests wait and the GPU
	// stays below this level, or below its own baseline level, it is not
	// fed (see gpu_util_waiting).
	GPUSaturated float64
	// BusyShare is the share (0..1) of scrapes with requests waiting at
	// and above which a queue persists rather than spikes and drains
	// (default 0.5).
	BusyShare float64
	// Lead is the least score by which the verdict's hypothesis must lead
	// the next competing one (default 0.15); a closer race is
	// undetermined, with both listed.
	Lead float64
	// Hotspot is the multiple of its fair share of the arrivals at and
	// above which one replica is a hot spot (default 1.3), and the
	// multiple of the fleet TTFT p95 at and above which one replica is
	// slower than the others.
	Hotspot float64
	// ProxyGap is the client/server TTFT p95 ratio at and above which the
	// time is spent outside the server (proxy, network).
	ProxyGap float64
	// PrefixDrop is the absolute fall of the prefix-cache hit ratio (0..1)
	// from baseline that counts as lost reuse.
	PrefixDrop float64
	// CorrStrong is the Pearson correlation at and above which running
	// sequences and TPOT move together.
	CorrStrong float64
	// CorrWeak is the absolute correlation below which they are
	// unrelated.
	CorrWeak float64
	// ErrorShare is the share (0..1) of failed, aborted, abandoned, lost,
	// rate-limited (429) or timed-out requests, or 5xx responses, at and
	// above which requests are not completing, when no SLO target is given
	// (default 0.01: 1% of arrivals).
	ErrorShare float64
	// CrashLoop is the number of restarts of one replica within the
	// incident window at and above which it crash-loops (default 2): a
	// single planned restart is not a crash loop.
	CrashLoop float64
	// MinSamples is the fewest observations a p50/p95 quantile needs to
	// be evaluated at all (in each window).
	MinSamples float64
	// MinSamplesTail is the fewest observations a p99 quantile needs:
	// with few observations p99 is a handful of requests.
	MinSamplesTail float64
}

// DefaultThresholds are the thresholds used when the caller has no
// better knowledge of its fleet.
var DefaultThresholds = Thresholds{
	Rise:             1.2,
	SeverityModerate: 1.4,
	SeveritySevere:   2,
	TailShape:        1.5,
	MeanConfirm:      1.1,
	SamplingZ:        2.576,
	GPUSaturated:     0.8,
	BusyShare:        0.5,
	Lead:             0.15,
	Steady:           1.2,
	Accumulating:     0.01,
	Burst:            3,
	Dispersion:       2,
	QueueMin:         1,
	ArrivalExcess:    1.05,
	Explains:         0.5,
	MinorityShare:    0.2,
	NearCapacity:     0.9,
	KVHigh:           0.9,
	Preemption:       0,
	PreemptionShare:  0.01,
	PreemptionStorm:  0.05,
	GPULow:           0.5,
	Hotspot:          1.3,
	ProxyGap:         1.5,
	PrefixDrop:       0.1,
	CorrStrong:       0.5,
	CorrWeak:         0.3,
	ErrorShare:       0.01,
	CrashLoop:        2,
	MinSamples:       20,
	MinSamplesTail:   100,

	// Trends of arrivals and of the queue.
	DispersionDetrended: 2,
	DrainedShare:        0.5,
	BacklogSpike:        2,
}

// SLO holds optional service-level targets. A zero field means "no
// target": the symptom it would judge is then judged against the
// baseline. Latencies are in seconds, shares in 0..1.
type SLO struct {
	TTFTP95 float64 // upper limit of TTFT p95 (server and client side)
	TTFTP99 float64 // upper limit of TTFT p99
	TPOTP95 float64 // upper limit of per-request TPOT p95
	ITLP95  float64 // upper limit of ITL p95
	E2EP99  float64 // upper limit of E2E p99
	// ErrorShare is the upper limit of each failure share (error, abort,
	// HTTP 5xx, timeout).
	ErrorShare float64
}

// limit names one field of Thresholds so that conditions can print it.
type limit struct {
	name string
	get  func(Thresholds) float64
}

var (
	limRise            = limit{"Rise", func(t Thresholds) float64 { return t.Rise }}
	limSteady          = limit{"Steady", func(t Thresholds) float64 { return t.Steady }}
	limAccumulating    = limit{"Accumulating", func(t Thresholds) float64 { return t.Accumulating }}
	limBurst           = limit{"Burst", func(t Thresholds) float64 { return t.Burst }}
	limQueueMin        = limit{"QueueMin", func(t Thresholds) float64 { return t.QueueMin }}
	limArrivalExcess   = limit{"ArrivalExcess", func(t Thresholds) float64 { return t.ArrivalExcess }}
	limExplains        = limit{"Explains", func(t Thresholds) float64 { return t.Explains }}
	limMinorityShare   = limit{"MinorityShare", func(t Thresholds) float64 { return t.MinorityShare }}
	limNearCapacity    = limit{"NearCapacity", func(t Thresholds) float64 { return t.NearCapacity }}
	limKVHigh          = limit{"KVHigh", func(t Thresholds) float64 { return t.KVHigh }}
	limPreemption      = limit{"Preemption", func(t Thresholds) float64 { return t.Preemption }}
	limGPULow          = limit{"GPULow", func(t Thresholds) float64 { return t.GPULow }}
	limGPUSaturated    = limit{"GPUSaturated", func(t Thresholds) float64 { return t.GPUSaturated }}
	limBusyShare       = limit{"BusyShare", func(t Thresholds) float64 { return t.BusyShare }}
	limPreemptionShare = limit{"PreemptionShare", func(t Thresholds) float64 { return t.PreemptionShare }}
	limPreemptionStorm = limit{"PreemptionStorm", func(t Thresholds) float64 { return t.PreemptionStorm }}
	limHotspot         = limit{"Hotspot", func(t Thresholds) float64 { return t.Hotspot }}
	limProxyGap        = limit{"ProxyGap", func(t Thresholds) float64 { return t.ProxyGap }}
	limPrefixDrop      = limit{"PrefixDrop", func(t Thresholds) float64 { return t.PrefixDrop }}
	limCorrStrong      = limit{"CorrStrong", func(t Thresholds) float64 { return t.CorrStrong }}
	limCorrWeak        = limit{"CorrWeak", func(t Thresholds) float64 { return t.CorrWeak }}
	// limSame is no threshold: growsNoMore compares two changes as they
	// are (a factor of 1).
	limSame = limit{"same", func(Thresholds) float64 { return 1 }}

	limDispersionDetrended = limit{"DispersionDetrended", func(t Thresholds) float64 { return t.DispersionDetrended }}
	limDrainedShare        = limit{"DrainedShare", func(t Thresholds) float64 { return t.DrainedShare }}
	limBacklogSpike        = limit{"BacklogSpike", func(t Thresholds) float64 { return t.BacklogSpike }}
)

// fields maps the snake_case name of every threshold (used on
// the command line: --thresholds rise=2,kv_high=0.95) to its field.
func (t *Thresholds) fields() map[string]*float64 {
	return map[string]*float64{
		"rise": &t.Rise, "steady": &t.Steady, "accumulating": &t.Accumulating, "burst": &t.Burst,
		"queue_min": &t.QueueMin, "arrival_excess": &t.ArrivalExcess, "explains": &t.Explains,
		"near_capacity": &t.NearCapacity, "kv_high": &t.KVHigh, "preemption": &t.Preemption,
		"gpu_low": &t.GPULow, "hotspot": &t.Hotspot, "proxy_gap": &t.ProxyGap, "prefix_drop": &t.PrefixDrop,
		"corr_strong": &t.CorrStrong, "corr_weak": &t.CorrWeak, "error_share": &t.ErrorShare,
		"min_samples": &t.MinSamples, "min_samples_tail": &t.MinSamplesTail,
		"severity_moderate": &t.SeverityModerate, "severity_severe": &t.SeveritySevere,
		"tail_shape": &t.TailShape, "gpu_saturated": &t.GPUSaturated, "busy_share": &t.BusyShare,
		"lead": &t.Lead, "preemption_share": &t.PreemptionShare, "preemption_storm": &t.PreemptionStorm, "dispersion": &t.Dispersion, "mean_confirm": &t.MeanConfirm, "sampling_z": &t.SamplingZ,
		"crash_loop": &t.CrashLoop, "dispersion_detrended": &t.DispersionDetrended, "drained_share": &t.DrainedShare,
		"backlog_spike": &t.BacklogSpike, "minority_share": &t.MinorityShare,
	}
}

// ThresholdNames returns the snake_case names Set accepts, sorted.
func ThresholdNames() []string {
	var t Thresholds
	names := make([]string, 0, 26)
	for n := range t.fields() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Set sets the threshold with the given snake_case name ("kv_high" for
// KVHigh). It refuses unknown names and values that are negative or not
// finite.
func (t *Thresholds) Set(name string, v float64) error {
	p, ok := t.fields()[name]
	if !ok {
		return fmt.Errorf("unknown threshold %q (known: %s)", name, strings.Join(ThresholdNames(), ", "))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("threshold %s = %v: want a finite value >= 0", name, v)
	}
	*p = v
	return nil
}

// Get returns the threshold with the given snake_case name.
func (t Thresholds) Get(name string) (float64, bool) {
	p, ok := t.fields()[name]
	if !ok {
		return 0, false
	}
	return *p, true
}

// DescribeThresholds prints every threshold by its snake_case name with
// its value and meaning, one per line, sorted by name.
func DescribeThresholds(th Thresholds) string {
	var b strings.Builder
	b.WriteString("thresholds (set with Thresholds.Set NAME=VALUE):\n")
	for _, n := range ThresholdNames() {
		v, _ := th.Get(n)
		fmt.Fprintf(&b, "  %-16s %g\n", n, v)
	}
	return b.String()
}
