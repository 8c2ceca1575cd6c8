package main

import (
	"context"
	"io"

	"github.com/whyslow/whyslow/rules"
)

// runRules implements "whyslow rules": print the decision map with the
// default thresholds.
func runRules(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e.stdout, "rules", "[flags]", "  whyslow rules\n")
	output := fs.String("o", "", "write the output to `FILE` instead of standard output")
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(paths) > 0 {
		return usagef("rules takes no PATH")
	}
	in := inputFlags{output: *output}
	out, closeOut, err := in.out(e)
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, rules.Describe(rules.DefaultThresholds)+"\n"+rules.DescribeThresholds(rules.DefaultThresholds))
	return closeOut(err)
}
