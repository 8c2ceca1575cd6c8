package snapshot

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"github.com/whyslow/whyslow/snapshot/internal/dumpdir"
	"github.com/whyslow/whyslow/snapshot/internal/stream"
)

// inflow reads r, the (decompressed) content of one file named name,
// into memory for the parser, counting every byte against the file's
// byte limit (decided from its first 64 KiB, see byteLimit) and the total
// budget. It returns the kept bytes, with lm mapping them to the
// original (stream.Read). On a limit, nothing is returned. A stream cut short (a
// truncated gzip file) returns what it held together with the error.
func (b *Builder) inflow(name string, r io.Reader, lm *stream.Map, sizeHint int64) ([]byte, error) {
	kind := "input"
	if _, ok := r.(*gzip.Reader); ok {
		kind = "gzip stream"
	}
	var limit, budget int64
	var what string
	out, total, err := stream.Read(r, lm, sizeHint, headSize, func(head []byte) (int64, int64, bool) {
		limit, what = b.byteLimit(head)
		budget = b.lim.MaxTotalBytes - b.total
		return limit, budget, !b.headIsOpenMetrics(name, head)
	})
	b.total += min(total, limit+1)
	switch {
	case total > limit:
		return nil, limitErr(what, limit, fmt.Sprintf("%s holds more than %s (%d bytes) decompressed; stopped after %d bytes; file not read", kind, what, limit, total))
	case total > budget:
		return nil, limitErr("Limits.MaxTotalBytes", b.lim.MaxTotalBytes, fmt.Sprintf("total input exceeds Limits.MaxTotalBytes (%d bytes); file not read", b.lim.MaxTotalBytes))
	case err != nil:
		return out, streamErr(err, total)
	}
	return out, nil
}

// streamErr describes an error of the stream read so far (n bytes).
func streamErr(err error, n int64) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: gzip stream cut short after %d decompressed bytes", ErrTruncated, n)
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader):
		return fmt.Errorf("%w: corrupt gzip stream after %d decompressed bytes: %v", ErrNotExposition, n, err)
	}
	return fmt.Errorf("read error after %d bytes: %w", n, err)
}

// headIsOpenMetrics is isOpenMetrics decided from the first bytes of a
// file, before its end (and its "# EOF") is seen.
func (b *Builder) headIsOpenMetrics(name string, head []byte) bool {
	switch b.opts.Format {
	case "text":
		return false
	case "openmetrics":
		return true
	}
	if bytes.HasPrefix(head, []byte("# UNIT ")) || bytes.Contains(head, []byte("\n# UNIT ")) {
		return true
	}
	return dumpdir.IsOpenMetricsName(name)
}

// openGzip returns a reader of the decompressed content of a gzip
// stream, or an error naming a bad header.
func openGzip(r io.Reader) (*gzip.Reader, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w: bad gzip header: %v", ErrNotExposition, err)
	}
	return zr, nil
}
