// Package diagnose turns snapshot evidence into a diagnosis: it chooses
// the windows, measures the fleet's and each replica's signals, computes
// the facts of package rules and runs the decision map. It parses no bytes,
// reads no clock and no file and formats nothing itself (package report
// writes what it decides); it must not import report/html nor a snapshot
// reader's subpackage.
//
// # Catalog
//
// The vLLM metric catalog (signals, metric names, versions) is package
// catalog; Options.Catalog adapts it, nil meaning catalog.Default().
//
// # Windows
//
// Diagnose compares a baseline window with an incident window, chosen in
// this order:
//
//   - as given in Options (a given incident without a baseline compares
//     with the Options.MaxWindow before it, everything before it with a
//     negative MaxWindow: From "preceding");
//   - one scrape per replica: the counters' lifetime, flagged "lifetime,
//     not windowed", with no baseline (symptoms then need SLO targets);
//   - two scrapes per replica (dumps taken before and after): the interval
//     between them is the incident, the lifetime before the first dump the
//     baseline;
//   - three or more: the change-point search (see below) splits the
//     evidence; when it finds no change, the first and second halves.
//     Either way each window is at most Options.MaxWindow (default 30
//     minutes) long, next to the split.
//
// # Histories read one target at a time
//
// The timelines, the scrape statistics and the change point are computed
// replica by replica, keeping a few numbers per replica and interval. A
// Surveyor computes them from a history handed over one target at a time
// (snapshot.ReadEach), so that a TSDB of a week is surveyed in the memory
// of one target's samples; Survey.ReadRanges then says which windows to
// read, and Diagnose with Options.Survey set gives the report Diagnose
// gives for the whole evidence. The command does this for a TSDB
// directory or a server when no window is given, and where one range
// covers the windows given (Options.Baseline and Options.Incident, which
// the Survey keeps). Neither read decodes what the
// diagnosis does not measure: the survey's read lists by their labels the
// families it does not (Surveyor.LabelsOnly) and, target by target, the
// candidates the catalog does not match (Surveyor.LabelsOnlyFor); the
// windows' read leaves out what the survey listed and no signal matches
// (Survey.SkipFor), whose labels the survey holds.
//
// Where the evidence is kept in a server, a Surveyor can take the
// histogram timelines from it (Surveyor.PushDown with a snapshot.Engine,
// such as promapi's): the server sums each interval's increase over the
// replicas scraped at both of its edges, the Surveyor asks for the
// samples of the others (SampleReads), and the survey is the one of a
// whole read. The command does this for a server URL.
//
// The change-point search works on per-interval fleet TTFT p95 (the
// observations made in each interval, buckets merged across replicas) and
// fleet waiting requests. For every split that leaves Options.MinWindow on
// each side it sums, over the two series, the standardised shift |mean
// after − mean before| / pooled standard deviation, counting only material
// shifts; the best split is proposed when the sum reaches
// ChangePointThreshold, then moved back to where the change began (the
// largest shift of an accumulating queue lies in its middle). The report
// prints the point, its score and the method; a flat series proposes none.
//
// # Signals and facts
//
// Fleet histograms are the exact merge of the replicas' increases over a
// window (histogram.Merge, after counter resets are handled): quantiles
// are taken after the merge, never averaged over pods. Per-replica
// signals sum the engines of a data-parallel pod (KV usage and GPU
// utilisation are averaged). Signals are never merged across models:
// evidence serving several model_name values is split into groups, as is
// any label named in Options.By. From the signals Diagnose computes every
// fact of package rules (rules.FactIDs), or marks it missing with the
// reason, and runs rules.Evaluate.
//
// # Requests that do not complete
//
// vLLM V1 counts a request its client abandons nowhere: no
// finished_reason="abort", no per-request histogram observation (vLLM
// issues #31503, #55634). Its prefill still counts in
// vllm:prompt_tokens_total and its first token in TTFT, so the facts
// abandoned_prompt_tokens (prompt_tokens_total minus the per-request
// prompt-token sum) and abandoned_after_first_token (TTFT count minus E2E
// count) estimate it, each corrected on every replica's process lifetimes
// for the requests running at the window's edges and before each restart,
// with bounds and the assumptions in the fact's source. Requests abandoned
// while still queued leave no trace unless a gateway's arrival counter is
// aliased (gateway_requests). Restarts come from process_start_time_seconds
// (or every counter dropping together), the requests lost with them from
// the backlog at the last scrape before each; OOM from kube-state-metrics
// or a framebuffer climb above the pod's own level.
//
// # Reports
//
// Diagnose returns a report.Report: a plain value with Report.String and
// WriteText for a terminal or notebook, WriteMarkdown for a postmortem,
// WriteJSON for tools (schema version report.SchemaVersion; non-finite
// numbers are null). The HTML page with timeline plots is html.Write of
// package report/html, which diagnose does not import, so a program that
// only diagnoses links no plotting package. report.CompareTable is the
// before and after table of p50 and p95 per signal. FleetQuantiles answers
// one histogram's quantiles for the fleet and per replica.
//
// # Experiments
//
// JudgeExperiment measures the runs of a single-variable experiment
// (after warm-up) and hands their facts to rules.Judge: adopt, reject,
// inconclusive or refused.
package diagnose
