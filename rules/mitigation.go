package rules

import "slices"

// deferredMitigations lists, for a hypothesis whose first mitigation is
// to act on another hypothesis' cause, those hypotheses: client
// abandonment's first step is "relieve the queue first (admission limits,
// more replicas)", which is what queue-sustained and queue-burst
// prescribe, so under a queue the two do not compete.
var deferredMitigations = map[HypothesisID][]HypothesisID{
	ClientAbandonment: {QueueSustained, QueueBurst},
}

// SameMitigation reports whether findings a and b call for the same
// action, so that neither competes with the other for confidence: the
// same first mitigation (the step a report says to take first), the same
// variable changed by their experiments, or a first mitigation that
// defers to the other's (deferredMitigations). Otherwise every supported
// pair competes, whether or not one refines the other: today only client
// abandonment shares its mitigation, with the queue hypotheses.
func SameMitigation(a, b Finding) bool {
	if len(a.Mitigations) > 0 && len(b.Mitigations) > 0 && a.Mitigations[0] == b.Mitigations[0] {
		return true
	}
	if a.Experiment.Change.Name != "" && a.Experiment.Change.Name == b.Experiment.Change.Name {
		return true
	}
	return slices.Contains(deferredMitigations[a.ID], b.ID) || slices.Contains(deferredMitigations[b.ID], a.ID)
}
