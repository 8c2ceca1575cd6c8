package main

import (
	"context"
	"flag"
	"strings"
	"time"

	"github.com/prometheus/common/config"

	"github.com/whyslow/whyslow/catalog"
	"github.com/whyslow/whyslow/snapshot"
	"github.com/whyslow/whyslow/snapshot/promapi"
)

// serverFlags are the flags of reading a Prometheus-compatible server
// (a PATH that is an http:// or https:// URL).
type serverFlags struct {
	readRange         string
	bearerTokenFile   string
	basicAuthUser     string
	basicAuthPassFile string
	headers           listFlag
	tlsCAFile         string
	tlsInsecure       bool
	concurrency       int
	timeout           time.Duration
	deadline          time.Duration
	remoteRead        bool
}

func (f *serverFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.readRange, "range", "", "read only evidence in the RFC 3339 interval `START/END` (END may be a duration, e.g. 2026-09-22T10:00:00Z/6h); a server URL without it is read over the 6h up to now")
	fs.StringVar(&f.bearerTokenFile, "bearer-token-file", "", "server URL: send the token in `FILE` as Authorization: Bearer")
	fs.StringVar(&f.basicAuthUser, "basic-auth-user", "", "server URL: HTTP basic authentication `USER` (with --basic-auth-password-file)")
	fs.StringVar(&f.basicAuthPassFile, "basic-auth-password-file", "", "server URL: basic authentication password in `FILE`")
	fs.Var(&f.headers, "header", "server URL: send header `NAME=VALUE`, e.g. X-Scope-OrgID=tenant for Mimir or Cortex; repeatable")
	fs.StringVar(&f.tlsCAFile, "tls-ca-file", "", "server URL: verify the server's certificate with the CA certificates in `FILE`")
	fs.BoolVar(&f.tlsInsecure, "tls-insecure-skip-verify", false, "server URL: do not verify the server's certificate")
	fs.IntVar(&f.concurrency, "server-concurrency", promapi.DefaultConfig.Concurrency, "server URL: at most `N` queries in flight")
	fs.DurationVar(&f.timeout, "server-timeout", promapi.DefaultConfig.Timeout, "server URL: give up on one query after `DURATION` (it is retried)")
	fs.BoolVar(&f.remoteRead, "remote-read", true, "server URL: read raw samples by the remote read protocol (/api/v1/read) where the server serves it; false reads them by query only")
	fs.DurationVar(&f.deadline, "server-deadline", promapi.DefaultConfig.Deadline, "server URL: give up on reading the server after `DURATION`, retries included")
}

// apply bounds opts's time range by --range (sets it, when the command
// chose none; narrows the one it chose, such as a window widened for
// its edge samples, to what lies within --range: nothing outside it is
// read, whatever the source) and, when a path is a server URL, returns
// ctx carrying the server configuration of the flags.
func (f *serverFlags) apply(ctx context.Context, paths []string, opts *snapshot.Options, in *inputFlags) (context.Context, error) {
	if f.readRange != "" {
		w, err := parseWindow(f.readRange)
		if err != nil {
			return ctx, usagef("--range: %v", err)
		}
		// A range the command chose wholly outside --range (windows
		// given apart from it) is read as chosen.
		if start, end, ok := within(opts.Start, opts.End, w); ok {
			opts.Start, opts.End = start, end
		}
	}
	urls := false
	for _, p := range paths {
		urls = urls || promapi.IsURL(p)
	}
	if !urls {
		return ctx, nil
	}
	if f.concurrency <= 0 {
		return ctx, usagef("--server-concurrency %d: want a positive count", f.concurrency)
	}
	if f.timeout <= 0 {
		return ctx, usagef("--server-timeout %s: want a positive duration", f.timeout)
	}
	if f.deadline <= 0 {
		return ctx, usagef("--server-deadline %s: want a positive duration", f.deadline)
	}
	cfg := promapi.Config{Concurrency: f.concurrency, Timeout: f.timeout, Deadline: f.deadline, QueryOnly: !f.remoteRead}
	h := config.HTTPClientConfig{BearerTokenFile: f.bearerTokenFile, FollowRedirects: true, EnableHTTP2: true}
	if f.basicAuthUser != "" || f.basicAuthPassFile != "" {
		if f.basicAuthUser == "" {
			return ctx, usagef("--basic-auth-password-file needs --basic-auth-user")
		}
		h.BasicAuth = &config.BasicAuth{Username: f.basicAuthUser, PasswordFile: f.basicAuthPassFile}
	}
	if len(f.headers) > 0 {
		h.HTTPHeaders = &config.Headers{Headers: map[string]config.Header{}}
		for _, kv := range f.headers {
			name, value, ok := strings.Cut(kv, "=")
			if !ok || strings.TrimSpace(name) == "" {
				return ctx, usagef("--header %q: want NAME=VALUE", kv)
			}
			name = strings.TrimSpace(name)
			hd := h.HTTPHeaders.Headers[name]
			hd.Values = append(hd.Values, value)
			h.HTTPHeaders.Headers[name] = hd
		}
	}
	h.TLSConfig = config.TLSConfig{CAFile: f.tlsCAFile, InsecureSkipVerify: f.tlsInsecure}
	if err := h.Validate(); err != nil {
		return ctx, usagef("server flags: %v", err)
	}
	cfg.HTTP = h
	if len(opts.Metrics) == 0 {
		if cat, err := in.catalog(); err == nil {
			cfg.KeepName = catalogNames(cat)
		}
	}
	return promapi.WithConfig(ctx, cfg), nil
}

// catalogNames keeps the metric names a diagnosis may read from a server
// that also holds other jobs' metrics: every name under a vLLM prefix
// (vllm:, ray_vllm:, --alias prefixes), and the catalog's other metrics
// (the GPU exporter's, HTTP and process metrics) with their histogram and
// _created series.
func catalogNames(cat *catalog.Catalog) func(string) bool {
	prefixes := append([]string{"vllm:", "ray_vllm:"}, cat.Prefixes()...)
	names := map[string]bool{}
	for _, s := range cat.Signals() {
		for _, c := range s.Candidates {
			m := c.Metric
			base := strings.TrimSuffix(m, "_total")
			for _, n := range []string{m, base + "_created", m + "_bucket", m + "_sum", m + "_count"} {
				names[n] = true
			}
		}
	}
	return func(name string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return names[name]
	}
}

// shownPaths joins the paths for a message, server URLs without their
// credentials and query strings.
func shownPaths(paths []string) string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if promapi.IsURL(p) {
			p = promapi.Redact(p)
		}
		out[i] = p
	}
	return strings.Join(out, ", ")
}

// within narrows the range [start, end] to bound, a zero end of either
// being unbounded, and reports whether anything of it is left.
func within(start, end time.Time, bound snapshot.Window) (time.Time, time.Time, bool) {
	if start.IsZero() || (!bound.Start.IsZero() && start.Before(bound.Start)) {
		start = bound.Start
	}
	if end.IsZero() || (!bound.End.IsZero() && end.After(bound.End)) {
		end = bound.End
	}
	return start, end, start.IsZero() || end.IsZero() || !start.After(end)
}
