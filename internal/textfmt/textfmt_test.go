package textfmt

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Numbers are written once: Number for tables, Prose for sentences
// (thousands separators, no exponent, whole multiples from 10x), so that
// nothing downstream rewrites them.
func TestFormat(t *testing.T) {
	start := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"integer", Integer(55477), "55,477"},
		{"integer small", Integer(960), "960"},
		{"integer million", Integer(6.311235e+06), "6,311,235"},
		{"integer negative", Integer(-1200), "-1,200"},
		{"integer rounds", Integer(999.6), "1,000"},
		{"integer NaN", Integer(math.NaN()), "n/a"},
		{"multiple small", Multiple(2.4001), "2.4x"},
		{"multiple under 10", Multiple(9.87), "9.87x"},
		{"multiple at 10", Multiple(10.39), "10x"},
		{"multiple large", Multiple(23920.86), "23,921x"},
		{"multiple NaN", Multiple(math.NaN()), "n/ax"},
		{"table number", Number(8112), "8112"},
		{"table tiny", Number(1.74e-05), "1.74e-05"},
		{"prose big", Prose(6.311235e+06), "6,311,235"},
		{"prose four digits", Prose(8112), "8,112"},
		{"prose rounds from 100", Prose(1234.5), "1,235"},
		{"prose tiny", Prose(1.234e-7), "0.000000123"},
		{"prose small", Prose(1.74e-05), "0.0000174"},
		{"prose plain", Prose(0.0417), "0.0417"},
		{"prose NaN", Prose(math.NaN()), "n/a"},
		{"quantile", Quantile(0.95), "95"},
		{"quantile with a decimal", Quantile(0.999), "99.9"},
		{"duration in minutes", Duration(30 * time.Minute), "30m"},
		{"duration in hours", Duration(90 * time.Minute), "1h30m"},
		{"duration whole hours", Duration(2 * time.Hour), "2h"},
		{"duration rounded", Duration(45*time.Second + 400*time.Millisecond), "45s"},
		{"plural one", Plural(1, "scrape", "scrapes"), "1 scrape"},
		{"plural many", Plural(0, "scrape", "scrapes"), "0 scrapes"},
		{"selector empty", Selector(nil), "all"},
		{"selector sorted", Selector(map[string]string{"model_name": "llama", "engine": "0"}), "engine=0,model_name=llama"},
		{"window", Window(start, start.Add(30*time.Minute), false), "2026-09-22 10:00:00–10:30:00Z (30m0s)"},
		{"window over midnight", Window(start.Add(13*time.Hour), start.Add(15*time.Hour), false), "2026-09-22 23:00:00–2026-09-23 01:00:00Z (2h0m0s)"},
		{"lifetime", Window(time.Time{}, start, true), "lifetime (since process start, to 2026-09-22 10:00:00Z)"},
		{"lifetime unknown end", Window(time.Time{}, time.Time{}, true), "lifetime (since process start; scrape time unknown)"},
	} {
		assert.Equal(t, tc.want, tc.got, tc.name)
	}
}
