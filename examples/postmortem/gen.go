//go:build ignore

// gen writes the sample evidence embedded by package evidence: the
// fleetsim scenario sample.Default, shrunk to the sample's size, as one
// gzip-compressed OpenMetrics document. Run it with
//
//	go generate ./examples/postmortem
//
// The simulator is seeded, so the output changes only when the simulator
// or the scenario does.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/whyslow/whyslow/examples/internal/sample"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	scenario := flag.String("scenario", sample.Default, "fleetsim scenario to write")
	dir := flag.String("dir", "evidence", "output directory")
	flag.Parse()

	data, err := sample.Dump(*scenario)
	if err != nil {
		log.Fatal(err)
	}
	path := filepath.Join(*dir, sample.FileName(*scenario))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %s (%d bytes)\n", path, len(data))
}
