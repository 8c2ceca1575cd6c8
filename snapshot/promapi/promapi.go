package promapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/config"

	"github.com/whyslow/whyslow/snapshot"
)

// Errors of the server reader, for errors.Is on a returned error or on a
// snapshot.Problem's Err.
var (
	// ErrServer: the server refused a query for good (4xx: bad
	// credentials, a bad selector) or kept failing after retries (5xx,
	// 429, timeouts, refused connections, answers cut short).
	ErrServer = errors.New("server query failed")
	// ErrTooLarge: one query would exceed the server's sample limit or
	// Config.MaxResponseBytes even for one pod over Config.MinRange.
	ErrTooLarge = errors.New("query too large for the server")
	// ErrDeadline: the read did not end within Config.Deadline.
	ErrDeadline = errors.New("deadline for reading the server passed")
	// ErrNativeHistogram: the server returned native histogram samples,
	// which this reader does not convert; they are dropped.
	ErrNativeHistogram = errors.New("native histogram samples from a server not supported")
)

func init() {
	snapshot.RegisterSource(snapshot.Source{Name: "promapi", Match: IsURL, Read: Read, ReadEach: ReadEach, Redact: Redact})
}

// IsURL reports whether path is an http:// or https:// address: a
// Prometheus-compatible server.
func IsURL(path string) bool {
	p := strings.ToLower(path)
	return strings.HasPrefix(p, "http://") || strings.HasPrefix(p, "https://")
}

// Config says how to talk to a server. The zero value is usable: every
// zero field takes its default (see DefaultConfig). Config is a struct so
// that it can grow without breaking callers.
type Config struct {
	// HTTP holds authentication, TLS and extra headers, as in a
	// Prometheus scrape or remote-read configuration: BearerTokenFile,
	// BasicAuth (Username, PasswordFile), TLSConfig (CAFile,
	// InsecureSkipVerify), HTTPHeaders (X-Scope-OrgID for a Mimir or
	// Cortex tenant). Secrets are read from their files on every request
	// and never appear in problems or errors: a server's message is shown
	// with every credential sent (and the address's password and query
	// values) replaced by "xxxxx", on one line, cut to 300 characters.
	// Header values count as credentials except X-Scope-OrgID,
	// THANOS-TENANT and User-Agent.
	//
	// Redirects are followed (FollowRedirects is not consulted), but
	// credentials go only to the scheme, host and port of the address:
	// a request redirected elsewhere carries no Authorization, basic
	// authentication, OAuth 2 token, client certificate, cookie or header
	// other than those named above.
	HTTP config.HTTPClientConfig
	// Concurrency bounds the queries in flight at once (default 3).
	Concurrency int
	// Timeout bounds one request, retries apart (default 2m).
	Timeout time.Duration
	// Deadline bounds the whole read of one server, retries included
	// (default 10m); past it the read fails with ErrDeadline, saying what
	// was done.
	Deadline time.Duration
	// Retries is how often a query that failed with a 5xx, a 429, a
	// timeout, a refused connection or an answer cut short is tried
	// again (default 3; a negative value disables retries).
	Retries int
	// Backoff is the wait before the first retry, doubled on each retry
	// (default 500ms); a Retry-After header is honoured instead, up to
	// MaxBackoff (default 30s).
	Backoff, MaxBackoff time.Duration
	// MaxRange is the longest time range of one query (default 2h).
	// Longer ranges are read in chunks.
	MaxRange time.Duration
	// MinRange is the shortest time range a query too large for the
	// server is split to (default 1m): a query for one pod over it that
	// is still too large fails the read with ErrTooLarge.
	MinRange time.Duration
	// TargetsPerQuery is how many pods (or instances) one query selects
	// (default 20).
	TargetsPerQuery int
	// Overfetch widens the first chunk backwards (default 1m, about one
	// scrape interval): servers differ on whether a range includes its
	// left edge, and samples outside [Options.Start, Options.End] are
	// trimmed by whyslow itself, so every server gives the same samples.
	Overfetch time.Duration
	// DefaultRange is the range read when Options.Start is zero, ending at
	// Options.End or now (default 6h): a server's history has no
	// whole to read.
	DefaultRange time.Duration
	// MaxResponseBytes bounds one response body (default
	// Options.Limits.MaxBytesPerScrape). A larger response makes the query
	// split, like a sample-limit error; a body announced larger is not
	// downloaded. The body of an error response is read up to 64 KiB.
	MaxResponseBytes int64
	// QueryOnly reads samples with range-vector queries (/api/v1/query)
	// only. By default a read asks for them by the remote read protocol
	// first (/api/v1/read, streamed XOR chunks), which Prometheus, Mimir
	// and Cortex serve at a fraction of a query's cost, and reads by
	// query, for the rest of the read, from a server that does not serve
	// it (an error status 400, 404, 405, 406, 415 or 501, to the first
	// read any 4xx but 413, 422 and 429, or an answer not in protocol
	// buffers: VictoriaMetrics, Thanos Query, a proxy) or whose
	// configuration gives external labels (Prometheus adds them to the
	// series it sends by remote read, not to query results). Both give
	// the same samples; the read's cost note says which was used.
	QueryOnly bool
	// KeepName, when non-nil and Options.Metrics is empty, chooses which
	// metric names on the server are read (nil reads all of them).
	KeepName func(name string) bool
	// Now is the clock for an open Options.End; nil means time.Now.
	Now func() time.Time
}

// DefaultConfig holds the defaults of Config's zero fields.
var DefaultConfig = Config{
	Concurrency:     3,
	Timeout:         2 * time.Minute,
	Deadline:        10 * time.Minute,
	Retries:         3,
	Backoff:         500 * time.Millisecond,
	MaxBackoff:      30 * time.Second,
	MaxRange:        2 * time.Hour,
	MinRange:        time.Minute,
	TargetsPerQuery: 20,
	Overfetch:       time.Minute,
	DefaultRange:    6 * time.Hour,
}

func (c Config) withDefaults(lim snapshot.Limits) Config {
	d := DefaultConfig
	c.Concurrency = positiveOr(c.Concurrency, d.Concurrency)
	c.Timeout = positiveOr(c.Timeout, d.Timeout)
	c.Deadline = positiveOr(c.Deadline, d.Deadline)
	if c.Retries == 0 {
		c.Retries = d.Retries
	} else if c.Retries < 0 {
		c.Retries = 0
	}
	c.Backoff = positiveOr(c.Backoff, d.Backoff)
	c.MaxBackoff = positiveOr(c.MaxBackoff, d.MaxBackoff)
	c.MaxRange = positiveOr(c.MaxRange, d.MaxRange)
	c.MinRange = positiveOr(c.MinRange, d.MinRange)
	c.TargetsPerQuery = positiveOr(c.TargetsPerQuery, d.TargetsPerQuery)
	c.Overfetch = positiveOr(c.Overfetch, d.Overfetch)
	c.DefaultRange = positiveOr(c.DefaultRange, d.DefaultRange)
	c.MaxResponseBytes = positiveOr(c.MaxResponseBytes, lim.MaxBytesPerScrape)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// positiveOr returns v when it is positive, else def.
func positiveOr[T cmp.Ordered](v, def T) T {
	var zero T
	if v > zero {
		return v
	}
	return def
}

type configKey struct{}

// WithConfig returns a context carrying cfg, which Read (and so
// snapshot.Read) uses for every server URL it reads under that context.
func WithConfig(ctx context.Context, cfg Config) context.Context {
	return context.WithValue(ctx, configKey{}, cfg)
}

// ConfigFrom returns the Config carried by ctx, or the zero Config.
func ConfigFrom(ctx context.Context) Config {
	c, _ := ctx.Value(configKey{}).(Config)
	return c
}

// Read reads the server at address with the Config carried by ctx (see
// WithConfig); it is the snapshot.Source registered for http(s):// paths.
// See Config.Read.
func Read(ctx context.Context, address string, opts snapshot.Options) (*snapshot.Evidence, error) {
	return ConfigFrom(ctx).Read(ctx, address, opts)
}

// Redact returns address without secrets: user information and a query
// string are replaced by "xxxxx", a fragment is dropped. An address that
// does not parse is reduced to its scheme and "xxxxx".
func Redact(address string) string {
	u, err := url.Parse(address)
	if err != nil {
		scheme, _, _ := strings.Cut(address, "://")
		return scheme + "://xxxxx"
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery = "xxxxx"
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// errorf formats an error of the reader for address (redacted).
func errorf(address, format string, args ...any) error {
	return fmt.Errorf("snapshot: server %s: "+format, append([]any{Redact(address)}, args...)...)
}
