package tsdb

import (
	"context"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/index"
)

// postingsForMatchers returns the series of ix whose labels satisfy
// every matcher of ms, a missing label having the empty value, in
// ascending ref order: the series tsdb.PostingsForMatchers selects. The
// matcher allSeries alone selects every series.
func postingsForMatchers(ctx context.Context, ix indexReader, ms []*labels.Matcher) (index.Postings, error) {
	all := func() (index.Postings, error) {
		k, v := index.AllPostingsKey()
		return ix.Postings(ctx, k, v)
	}
	if len(ms) == 1 && ms[0].Name == "" && ms[0].Value == "" {
		return all()
	}
	var its, drop []index.Postings
	for _, m := range ms {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if m.Matches("") {
			// Every series but those with a value of m.Name that m
			// does not match.
			p, err := notMatching(ctx, ix, m)
			if err != nil {
				return nil, err
			}
			drop = append(drop, p)
			continue
		}
		p, err := matching(ctx, ix, m)
		if err != nil {
			return nil, err
		}
		its = append(its, p)
	}
	if len(its) == 0 {
		p, err := all()
		if err != nil {
			return nil, err
		}
		its = append(its, p)
	}
	it := index.Intersect(its...)
	for _, d := range drop {
		it = index.Without(it, d)
	}
	return it, nil
}

// matching returns the series with a value of m.Name that m matches.
func matching(ctx context.Context, ix indexReader, m *labels.Matcher) (index.Postings, error) {
	switch {
	case m.Type == labels.MatchEqual:
		return ix.Postings(ctx, m.Name, m.Value)
	case m.Type == labels.MatchRegexp && len(m.SetMatches()) > 0:
		return ix.Postings(ctx, m.Name, m.SetMatches()...)
	}
	p := ix.PostingsForLabelMatching(ctx, m.Name, m.Matches)
	return p, p.Err()
}

// notMatching returns the series with a value of m.Name that m does not
// match.
func notMatching(ctx context.Context, ix indexReader, m *labels.Matcher) (index.Postings, error) {
	switch {
	case m.Type == labels.MatchNotEqual:
		return ix.Postings(ctx, m.Name, m.Value)
	case m.Type == labels.MatchNotRegexp && len(m.SetMatches()) > 0:
		return ix.Postings(ctx, m.Name, m.SetMatches()...)
	}
	p := ix.PostingsForLabelMatching(ctx, m.Name, func(v string) bool { return !m.Matches(v) })
	return p, p.Err()
}
