package snapshot

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// gunzip decompresses a gzip stream (several members are concatenated)
// into at most max bytes. A stream that would decompress to more is a
// gzip bomb: ErrLimit, and nothing is returned. A stream cut short returns
// what it held and ErrTruncated.
func gunzip(data []byte, max int64, limit string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: bad gzip header: %v", ErrNotExposition, err)
	}
	defer zr.Close()
	// Guess the output size from the trailer (ISIZE, mod 2^32), capped.
	size := int64(len(data)) * 4
	if len(data) >= 4 {
		tail := data[len(data)-4:]
		if n := int64(tail[0]) | int64(tail[1])<<8 | int64(tail[2])<<16 | int64(tail[3])<<24; n > size && n <= max {
			size = n
		}
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(size+512, max+1)))
	n, err := io.Copy(buf, io.LimitReader(zr, max+1))
	switch {
	case n > max:
		return nil, fmt.Errorf("%w: gzip stream decompresses to more than %s (%d bytes); file not read", ErrLimit, limit, max)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return buf.Bytes(), fmt.Errorf("%w: gzip stream cut short after %d decompressed bytes", ErrTruncated, n)
	case err != nil:
		return buf.Bytes(), fmt.Errorf("%w: corrupt gzip stream after %d decompressed bytes: %v", ErrNotExposition, n, err)
	}
	return buf.Bytes(), nil
}

// gunzipHead returns up to the first 64 KiB of a gzip stream's
// decompressed content, ignoring errors: enough to see what kind of file
// it is.
func gunzipHead(data []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	defer zr.Close()
	head, _ := io.ReadAll(io.LimitReader(zr, headSize))
	return head
}
