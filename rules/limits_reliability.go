package rules

// Limits of the reliability rows of the map (client-abandonment,
// replica-restarts, server-errors): every failure share is judged against
// Thresholds.ErrorShare (1% of requests by default), a crash loop against
// Thresholds.CrashLoop.
var (
	limErrorShare = limit{"ErrorShare", func(t Thresholds) float64 { return t.ErrorShare }}
	limCrashLoop  = limit{"CrashLoop", func(t Thresholds) float64 { return t.CrashLoop }}
	// limAny is "at least one": a single OOM kill or lost request is a
	// fact worth a check, not a threshold to tune.
	limAny = limit{"any", func(Thresholds) float64 { return 0 }}
)
