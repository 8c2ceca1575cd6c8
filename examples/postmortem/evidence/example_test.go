package evidence_test

import (
	"fmt"
	"time"

	"github.com/whyslow/whyslow/examples/postmortem/evidence"
)

func ExampleRead() {
	ev, err := evidence.Read()
	if err != nil {
		panic(err)
	}
	first, last := ev.Span()
	fmt.Println(first.Format(time.RFC3339), "to", last.Format(time.RFC3339))
	for _, t := range ev.Targets {
		fmt.Println(t.Name, len(t.Scrapes), "scrapes")
	}
	// Output:
	// 2026-09-22T10:00:00Z to 2026-09-22T11:00:00Z
	// vllm-0 120 scrapes
	// vllm-1 121 scrapes
	// vllm-2 121 scrapes
	// vllm-3 120 scrapes
}
