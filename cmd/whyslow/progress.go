package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/whyslow/whyslow/snapshot"
)

// progressBar draws reading progress on a terminal's stderr, at most ten
// times a second, and erases itself when done. It is used only when stderr
// is a terminal, so that logs and pipes never see it.
type progressBar struct {
	w     io.Writer
	last  time.Time
	drawn bool
	now   func() time.Time
}

func newProgressBar(w io.Writer) *progressBar {
	return &progressBar{w: w, now: time.Now}
}

// update is a snapshot.Options.Progress callback.
func (p *progressBar) update(pr snapshot.Progress) {
	done := pr.Total > 0 && pr.Done >= pr.Total
	t := p.now()
	if !done && t.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = t
	const width = 30
	frac := 0.0
	if pr.Total > 0 {
		frac = float64(pr.Done) / float64(pr.Total)
	}
	n := int(frac * width)
	name := pr.Path
	if len(name) > 40 {
		name = "…" + name[len(name)-39:]
	}
	fmt.Fprintf(p.w, "\r\033[Kreading %s [%s%s] %d/%d %s", name, strings.Repeat("#", n), strings.Repeat(".", width-n), pr.Done, pr.Total, pr.What)
	p.drawn = true
}

// finish erases the bar.
func (p *progressBar) finish() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
