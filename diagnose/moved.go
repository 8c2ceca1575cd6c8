// What moved out of diagnose (issue 9): the vLLM metric catalog to package
// catalog, the report schema and its writers to package report (HTML to
// report/html). These names are those packages', kept here so that code
// written against diagnose before the move compiles unchanged: Diagnose
// returns a report.Report, so rep.WriteText, rep.WriteMarkdown,
// rep.WriteJSON and rep.String work as before. New code should import
// catalog and report.

package diagnose

import (
	"io"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/histogram"
	"github.com/whyslow/whyslow/report"
)

// Types of package catalog.
type (
	// Aggregation is catalog.Aggregation.
	Aggregation = catalog.Aggregation
	// Candidate is catalog.Candidate.
	Candidate = catalog.Candidate
	// Catalog is catalog.Catalog.
	Catalog = catalog.Catalog
	// Clue is catalog.Clue.
	Clue = catalog.Clue
	// Confidence is catalog.Confidence.
	Confidence = catalog.Confidence
	// Drift is catalog.Drift.
	Drift = catalog.Drift
	// DriftValue is catalog.DriftValue.
	DriftValue = catalog.DriftValue
	// Engine is catalog.Engine.
	Engine = catalog.Engine
	// Era is catalog.Era.
	Era = catalog.Era
	// Match is catalog.Match.
	Match = catalog.Match
	// Resolution is catalog.Resolution.
	Resolution = catalog.Resolution
	// SignalID is catalog.SignalID.
	SignalID = catalog.SignalID
	// SignalKind is catalog.SignalKind.
	SignalKind = catalog.SignalKind
	// SignalSpec is catalog.SignalSpec.
	SignalSpec = catalog.SignalSpec
	// TargetResolution is catalog.TargetResolution.
	TargetResolution = catalog.TargetResolution
	// Version is catalog.Version.
	Version = catalog.Version
	// VersionRange is catalog.VersionRange.
	VersionRange = catalog.VersionRange
)

// Constants of package catalog.
const (
	// AggregateMean is catalog.AggregateMean.
	AggregateMean = catalog.AggregateMean
	// AggregateNone is catalog.AggregateNone.
	AggregateNone = catalog.AggregateNone
	// AggregateSum is catalog.AggregateSum.
	AggregateSum = catalog.AggregateSum
	// Approximate is catalog.Approximate.
	Approximate = catalog.Approximate
	// Documented is catalog.Documented.
	Documented = catalog.Documented
	// EngineNotVLLM is catalog.EngineNotVLLM.
	EngineNotVLLM = catalog.EngineNotVLLM
	// EngineUnknown is catalog.EngineUnknown.
	EngineUnknown = catalog.EngineUnknown
	// EngineV0 is catalog.EngineV0.
	EngineV0 = catalog.EngineV0
	// EngineV1 is catalog.EngineV1.
	EngineV1 = catalog.EngineV1
	// KindCounter is catalog.KindCounter.
	KindCounter = catalog.KindCounter
	// KindGauge is catalog.KindGauge.
	KindGauge = catalog.KindGauge
	// KindHistogram is catalog.KindHistogram.
	KindHistogram = catalog.KindHistogram
	// KindInfo is catalog.KindInfo.
	KindInfo = catalog.KindInfo
	// PercentGuardLimit is catalog.PercentGuardLimit.
	PercentGuardLimit = catalog.PercentGuardLimit
	// SignalCacheConfig is catalog.SignalCacheConfig.
	SignalCacheConfig = catalog.SignalCacheConfig
	// SignalClientTTFT is catalog.SignalClientTTFT.
	SignalClientTTFT = catalog.SignalClientTTFT
	// SignalDecodeTime is catalog.SignalDecodeTime.
	SignalDecodeTime = catalog.SignalDecodeTime
	// SignalE2E is catalog.SignalE2E.
	SignalE2E = catalog.SignalE2E
	// SignalGPUUtil is catalog.SignalGPUUtil.
	SignalGPUUtil = catalog.SignalGPUUtil
	// SignalGenerationTokens is catalog.SignalGenerationTokens.
	SignalGenerationTokens = catalog.SignalGenerationTokens
	// SignalGenerationTokensTotal is catalog.SignalGenerationTokensTotal.
	SignalGenerationTokensTotal = catalog.SignalGenerationTokensTotal
	// SignalHTTPRequests is catalog.SignalHTTPRequests.
	SignalHTTPRequests = catalog.SignalHTTPRequests
	// SignalITL is catalog.SignalITL.
	SignalITL = catalog.SignalITL
	// SignalInferenceTime is catalog.SignalInferenceTime.
	SignalInferenceTime = catalog.SignalInferenceTime
	// SignalIterationTokens is catalog.SignalIterationTokens.
	SignalIterationTokens = catalog.SignalIterationTokens
	// SignalKVUsage is catalog.SignalKVUsage.
	SignalKVUsage = catalog.SignalKVUsage
	// SignalMaxNumSeqs is catalog.SignalMaxNumSeqs.
	SignalMaxNumSeqs = catalog.SignalMaxNumSeqs
	// SignalMaxTokens is catalog.SignalMaxTokens.
	SignalMaxTokens = catalog.SignalMaxTokens
	// SignalPreemptions is catalog.SignalPreemptions.
	SignalPreemptions = catalog.SignalPreemptions
	// SignalPrefillTime is catalog.SignalPrefillTime.
	SignalPrefillTime = catalog.SignalPrefillTime
	// SignalPrefixCacheHitRate is catalog.SignalPrefixCacheHitRate.
	SignalPrefixCacheHitRate = catalog.SignalPrefixCacheHitRate
	// SignalPrefixCacheHits is catalog.SignalPrefixCacheHits.
	SignalPrefixCacheHits = catalog.SignalPrefixCacheHits
	// SignalPrefixCacheQueries is catalog.SignalPrefixCacheQueries.
	SignalPrefixCacheQueries = catalog.SignalPrefixCacheQueries
	// SignalProcessStart is catalog.SignalProcessStart.
	SignalProcessStart = catalog.SignalProcessStart
	// SignalPromptTokens is catalog.SignalPromptTokens.
	SignalPromptTokens = catalog.SignalPromptTokens
	// SignalPromptTokensTotal is catalog.SignalPromptTokensTotal.
	SignalPromptTokensTotal = catalog.SignalPromptTokensTotal
	// SignalQueueTime is catalog.SignalQueueTime.
	SignalQueueTime = catalog.SignalQueueTime
	// SignalRequestSuccess is catalog.SignalRequestSuccess.
	SignalRequestSuccess = catalog.SignalRequestSuccess
	// SignalRunning is catalog.SignalRunning.
	SignalRunning = catalog.SignalRunning
	// SignalSwapped is catalog.SignalSwapped.
	SignalSwapped = catalog.SignalSwapped
	// SignalTPOT is catalog.SignalTPOT.
	SignalTPOT = catalog.SignalTPOT
	// SignalTTFT is catalog.SignalTTFT.
	SignalTTFT = catalog.SignalTTFT
	// SignalWaiting is catalog.SignalWaiting.
	SignalWaiting = catalog.SignalWaiting
	// TPOTFallback is catalog.TPOTFallback.
	TPOTFallback = catalog.TPOTFallback
	// UnitCount is catalog.UnitCount.
	UnitCount = catalog.UnitCount
	// UnitNone is catalog.UnitNone.
	UnitNone = catalog.UnitNone
	// UnitRatio is catalog.UnitRatio.
	UnitRatio = catalog.UnitRatio
	// UnitRequests is catalog.UnitRequests.
	UnitRequests = catalog.UnitRequests
	// UnitSeconds is catalog.UnitSeconds.
	UnitSeconds = catalog.UnitSeconds
	// UnitTokens is catalog.UnitTokens.
	UnitTokens = catalog.UnitTokens
	// UnitUnixSeconds is catalog.UnitUnixSeconds.
	UnitUnixSeconds = catalog.UnitUnixSeconds
	// Unverified is catalog.Unverified.
	Unverified = catalog.Unverified
)

// Errors of package catalog; errors.Is matches either name.
var (
	// ErrConfigDrift is catalog.ErrConfigDrift.
	ErrConfigDrift = catalog.ErrConfigDrift
	// ErrConflictingClues is catalog.ErrConflictingClues.
	ErrConflictingClues = catalog.ErrConflictingClues
	// ErrNotVLLM is catalog.ErrNotVLLM.
	ErrNotVLLM = catalog.ErrNotVLLM
	// ErrPartialSignal is catalog.ErrPartialSignal.
	ErrPartialSignal = catalog.ErrPartialSignal
	// ErrUnexpectedType is catalog.ErrUnexpectedType.
	ErrUnexpectedType = catalog.ErrUnexpectedType
	// ErrUnknownSignal is catalog.ErrUnknownSignal.
	ErrUnknownSignal = catalog.ErrUnknownSignal
	// ErrVersionSkew is catalog.ErrVersionSkew.
	ErrVersionSkew = catalog.ErrVersionSkew
)

// Between is catalog.Between.
func Between(e Engine, first, last Version) VersionRange { return catalog.Between(e, first, last) }

// DefaultCatalog is catalog.Default.
func DefaultCatalog() Catalog { return catalog.Default() }

// History is catalog.History.
func History() []Era { return catalog.History() }

// MeanTPOTFromSums is catalog.MeanTPOTFromSums.
func MeanTPOTFromSums(decodeTimeSum, generationTokensSum, generationTokensCount float64) float64 {
	return catalog.MeanTPOTFromSums(decodeTimeSum, generationTokensSum, generationTokensCount)
}

// ParseVersion is catalog.ParseVersion.
func ParseVersion(s string) (Version, error) { return catalog.ParseVersion(s) }

// Since is catalog.Since.
func Since(e Engine, min Version) VersionRange { return catalog.Since(e, min) }

// Types of package report.
type (
	// Report is report.Report: what Diagnose returns.
	Report = report.Report
	// ChangePoint is report.ChangePoint.
	ChangePoint = report.ChangePoint
	// CompareRow is report.CompareRow.
	CompareRow = report.CompareRow
	// Dimension is report.Dimension.
	Dimension = report.Dimension
	// FactValue is report.FactValue.
	FactValue = report.FactValue
	// Float is report.Float.
	Float = report.Float
	// Inputs is report.Inputs.
	Inputs = report.Inputs
	// Measure is report.Measure.
	Measure = report.Measure
	// Point is report.Point.
	Point = report.Point
	// QuantileReport is report.QuantileReport: what FleetQuantiles returns.
	QuantileReport = report.QuantileReport
	// Quantile is report.Quantile.
	Quantile = report.Quantile
	// Settings is report.Settings.
	Settings = report.Settings
	// Signal is report.Signal.
	Signal = report.Signal
	// Signals is report.Signals.
	Signals = report.Signals
	// Timeline is report.Timeline.
	Timeline = report.Timeline
	// WindowInfo is report.WindowInfo.
	WindowInfo = report.WindowInfo
	// WindowSpan is report.WindowSpan.
	WindowSpan = report.WindowSpan
	// Windows is report.Windows.
	Windows = report.Windows
)

// SchemaVersion is report.SchemaVersion.
const SchemaVersion = report.SchemaVersion

// CompareTable is report.CompareTable.
func CompareTable(r *Report) []CompareRow { return report.CompareTable(r) }

// QuantileOf is report.QuantileOf.
func QuantileOf(e histogram.Estimate) Quantile { return report.QuantileOf(e) }

// WriteCompareText is report.WriteCompareText.
func WriteCompareText(w io.Writer, rows []CompareRow) error { return report.WriteCompareText(w, rows) }

// WriteCompareMarkdown is report.WriteCompareMarkdown.
func WriteCompareMarkdown(w io.Writer, rows []CompareRow) error {
	return report.WriteCompareMarkdown(w, rows)
}
