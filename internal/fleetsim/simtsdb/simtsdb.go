// Package simtsdb writes a simulated fleet ([fleetsim.Fleet]) as a
// Prometheus TSDB data directory, through
// github.com/prometheus/prometheus/tsdb. It is apart from fleetsim so that
// programs that only simulate or write dumps do not link the TSDB and, with
// it, Prometheus's service discovery and its cloud and Kubernetes clients.
package simtsdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/whyslow/whyslow/internal/fleetsim"
)

// commitEvery is the number of samples appended per transaction.
const commitEvery = 50000

// Write writes f into a Prometheus TSDB data directory at dir, as a
// Prometheus server scraping every pod and its GPU exporter would have
// stored it: the samples of [fleetsim.Fleet.EachStored] (target labels,
// staleness markers, up series as opts say), persisted blocks aligned on
// opts.BlockDuration and a head (WAL) holding the last opts.HeadSpan.
// dir is created if needed and should be empty.
func Write(f *fleetsim.Fleet, dir string, opts fleetsim.TSDBOptions) (err error) {
	if opts.HeadSpan == 0 {
		opts.HeadSpan = 10 * time.Minute
	}
	if opts.BlockDuration == 0 {
		opts.BlockDuration = 2 * time.Hour
	}
	o := tsdb.DefaultOptions()
	o.RetentionDuration = 0
	o.MinBlockDuration = opts.BlockDuration.Milliseconds()
	o.MaxBlockDuration = opts.BlockDuration.Milliseconds()
	logger := slog.New(slog.DiscardHandler)
	db, err := tsdb.Open(dir, logger, nil, o, nil)
	if err != nil {
		return fmt.Errorf("simtsdb: open TSDB %s: %w", dir, err)
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	db.DisableCompactions()

	ctx := context.Background()
	var refs []storage.SeriesRef
	app := db.AppenderV2(ctx)
	appended := 0
	err = f.EachStored(opts, func(series int, lset labels.Labels, t int64, v float64) error {
		if series == len(refs) {
			refs = append(refs, 0)
		}
		ref, err := app.Append(refs[series], lset, 0, t, v, nil, nil, storage.AOptions{})
		if err != nil {
			return fmt.Errorf("simtsdb: append %s at %d: %w", lset, t, err)
		}
		refs[series] = ref
		appended++
		if appended%commitEvery == 0 {
			if err := app.Commit(); err != nil {
				return err
			}
			app = db.AppenderV2(ctx)
		}
		return nil
	})
	if err != nil {
		return errors.Join(err, app.Rollback())
	}
	if err := app.Commit(); err != nil {
		return err
	}

	head := db.Head()
	if head.NumSeries() == 0 {
		return nil
	}
	mint, maxt := head.MinTime(), head.MaxTime()
	cut := maxt + 1
	if opts.HeadSpan > 0 {
		cut = maxt + 1 - opts.HeadSpan.Milliseconds()
	}
	br := opts.BlockDuration.Milliseconds()
	for lo := mint - mint%br; lo < cut; lo += br {
		from, to := max(lo, mint), min(lo+br, cut)
		if from >= to {
			continue
		}
		if err := db.CompactHead(tsdb.NewRangeHead(head, from, to-1)); err != nil {
			return fmt.Errorf("simtsdb: compact head [%d, %d): %w", from, to, err)
		}
	}
	return nil
}
