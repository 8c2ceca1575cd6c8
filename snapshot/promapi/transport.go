package promapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/api"
	"github.com/prometheus/common/config"
)

// harmlessHeaders are the canonical names of the headers of
// Config.HTTP.HTTPHeaders whose values are not credentials: the tenant
// ids of Mimir, Cortex and Thanos. Their values may appear in messages and
// are sent on a redirect to another origin; the value of any other header
// set there is treated as a secret.
var harmlessHeaders = map[string]bool{
	"X-Scope-Orgid": true,
	"Thanos-Tenant": true,
	"User-Agent":    true,
}

// maxMessage bounds the length, in runes, of a server's message as shown
// in an error or a problem.
const maxMessage = 300

// maxErrorBody bounds what is read of the body of a response that is not
// a success: enough for any server's error message.
const maxErrorBody = 64 << 10

// transport is the reader's round tripper. Requests to the origin (scheme,
// host and port) of the address the user gave go through authed, which
// adds the credentials of Config.HTTP; requests to any other origin (a
// redirect's target) go through bare, which adds none, with every
// credential header removed. It records each response's status and
// Retry-After in the request's attempt, notes the credentials it sent as
// secrets to redact, refuses a body announced larger than max and cuts
// one that turns out larger.
type transport struct {
	origin   string
	authed   http.RoundTripper
	bare     http.RoundTripper
	max      int64
	secret   []string // canonical names of headers that carry credentials
	sec      *secrets
	requests atomic.Int64
	// received counts the bytes of response bodies read (after the HTTP
	// client's decompression), error bodies included.
	received atomic.Int64
}

// newTransport returns the transport for the server at u with the
// configuration h.
func newTransport(h config.HTTPClientConfig, u *url.URL, max int64) (*transport, error) {
	authed, err := config.NewRoundTripperFromConfig(h, "whyslow")
	if err != nil {
		return nil, err
	}
	bare, err := config.NewRoundTripperFromConfig(bareConfig(h), "whyslow")
	if err != nil {
		return nil, err
	}
	t := &transport{origin: originOf(u), authed: authed, bare: bare, max: max, sec: &secrets{}}
	t.secret = []string{"Authorization", "Cookie"}
	if h.HTTPHeaders != nil {
		for name := range h.HTTPHeaders.Headers {
			if c := http.CanonicalHeaderKey(name); !harmlessHeaders[c] && !slices.Contains(t.secret, c) {
				t.secret = append(t.secret, c)
			}
		}
	}
	t.sec.addConfig(h, u)
	return t, nil
}

// bareConfig is h without any credential: no authorization, basic
// authentication, OAuth 2, client certificate or header but the harmless
// ones; TLS verification and the proxy stay as they are.
func bareConfig(h config.HTTPClientConfig) config.HTTPClientConfig {
	b := config.HTTPClientConfig{
		TLSConfig:       h.TLSConfig,
		ProxyConfig:     h.ProxyConfig,
		FollowRedirects: h.FollowRedirects,
		EnableHTTP2:     h.EnableHTTP2,
	}
	tc := &b.TLSConfig
	tc.Cert, tc.CertFile, tc.CertRef = "", "", ""
	tc.Key, tc.KeyFile, tc.KeyRef = "", "", ""
	tc.ServerName = ""
	if h.HTTPHeaders != nil {
		for name, hd := range h.HTTPHeaders.Headers {
			if harmlessHeaders[http.CanonicalHeaderKey(name)] && len(hd.Values) > 0 {
				if b.HTTPHeaders == nil {
					b.HTTPHeaders = &config.Headers{Headers: map[string]config.Header{}}
				}
				b.HTTPHeaders.Headers[name] = config.Header{Values: hd.Values}
			}
		}
	}
	return b
}

// originOf is u's scheme, host and port, the port made explicit.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// checkRedirect follows at most 10 redirects, as Go's default does. The
// credentials of a redirected request are decided by RoundTrip.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("stopped after %d redirects", len(via))
	}
	return nil
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.requests.Add(1)
	a, _ := req.Context().Value(attemptKey{}).(*attempt)
	next := t.authed
	if originOf(req.URL) != t.origin {
		// A redirect to another origin: Go copies Authorization to
		// another port of the same host, and authed would add every
		// credential again.
		next = t.bare
		req = req.Clone(req.Context())
		for _, name := range t.secret {
			req.Header.Del(name)
		}
		if a != nil {
			a.mu.Lock()
			ru := *req.URL
			ru.User, ru.RawQuery, ru.ForceQuery = nil, "", false
			a.redirect = Redact(ru.String())
			a.mu.Unlock()
		}
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if next == t.authed && resp.Request != nil {
		// The request as sent, with the credentials the inner round
		// trippers added (read from their files at each request).
		t.sec.addHeaders(resp.Request.Header, t.secret)
	}
	if a != nil {
		a.mu.Lock()
		a.status = resp.StatusCode
		a.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		a.mu.Unlock()
	}
	if resp.StatusCode/100 != 2 {
		resp.Body = &limitBody{rc: resp.Body, left: maxErrorBody, cut: true, n: &t.received}
		return resp, nil
	}
	if t.max > 0 && resp.ContentLength > t.max {
		// Not downloaded: the query is split before its body is read.
		resp.Body.Close()
		a.setTooLarge()
		return nil, fmt.Errorf("%w: %d bytes announced, more than Config.MaxResponseBytes (%d bytes)", errBodyTooLarge, resp.ContentLength, t.max)
	}
	resp.Body = &limitBody{rc: resp.Body, left: t.max, a: a, max: t.max, n: &t.received}
	return resp, nil
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(s string, now time.Time) time.Duration {
	if s == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(s); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// errBodyTooLarge: a response body exceeded Config.MaxResponseBytes.
var errBodyTooLarge = errors.New("response exceeds the size limit")

// limitBody reads at most left bytes of rc: past them it fails with
// errBodyTooLarge, or, with cut set, ends.
type limitBody struct {
	rc   io.ReadCloser
	left int64
	max  int64
	cut  bool
	a    *attempt
	n    *atomic.Int64 // counts the bytes read
}

func (b *limitBody) Read(p []byte) (int, error) {
	if b.cut && b.left <= 0 {
		return 0, io.EOF
	}
	if b.left < 0 {
		return 0, b.tooLarge()
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more tells a larger body
	}
	n, err := b.rc.Read(p)
	b.n.Add(int64(n))
	b.left -= int64(n)
	if b.left < 0 {
		if b.cut {
			return n + int(b.left), io.EOF
		}
		return n + int(b.left), b.tooLarge()
	}
	return n, err
}

func (b *limitBody) tooLarge() error {
	b.a.setTooLarge()
	return fmt.Errorf("%w (Config.MaxResponseBytes, %d bytes)", errBodyTooLarge, b.max)
}

func (b *limitBody) Close() error { return b.rc.Close() }

// secrets are the values a read must never show: the credentials it was
// configured with or sent, and the password and query values of the
// address, each also as it would read URL- or JSON-escaped.
type secrets struct {
	mu   sync.Mutex
	vals []string // longest first
}

// add notes vs (empty ones apart) and their escaped forms.
func (s *secrets) add(vs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.vals)
	for _, v := range vs {
		if strings.TrimSpace(v) == "" {
			continue
		}
		j, _ := json.Marshal(v)
		for _, f := range []string{v, strings.TrimSpace(v), url.QueryEscape(v), url.PathEscape(v), string(j[1 : len(j)-1])} {
			if f != "" && !slices.Contains(s.vals, f) {
				s.vals = append(s.vals, f)
			}
		}
	}
	if len(s.vals) > n {
		slices.SortStableFunc(s.vals, func(a, b string) int { return len(b) - len(a) })
	}
}

// addAuthorization notes the value of an Authorization header, its
// credentials alone and, for basic authentication, what they encode.
func (s *secrets) addAuthorization(v string) {
	s.add(v)
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok {
		return
	}
	s.add(cred)
	if strings.EqualFold(scheme, "Basic") {
		if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil {
			_, pw, _ := strings.Cut(string(dec), ":")
			s.add(string(dec), pw)
		}
	}
}

// addHeaders notes the values of the headers of h named in names.
func (s *secrets) addHeaders(h http.Header, names []string) {
	for _, name := range names {
		for _, v := range h.Values(name) {
			if name == "Authorization" {
				s.addAuthorization(v)
			} else {
				s.add(v)
			}
		}
	}
}

// addConfig notes the secrets written in h and in the address u. Those
// kept in files are noted when a request carries them (addHeaders): a
// file is read by the round tripper alone, as it may be a pipe.
func (s *secrets) addConfig(h config.HTTPClientConfig, u *url.URL) {
	s.add(string(h.BearerToken))
	if a := h.Authorization; a != nil {
		s.add(string(a.Credentials))
	}
	if b := h.BasicAuth; b != nil && b.Password != "" {
		s.add(string(b.Password))
		s.addAuthorization("Basic " + base64.StdEncoding.EncodeToString([]byte(b.Username+":"+string(b.Password))))
	}
	if o := h.OAuth2; o != nil {
		s.add(string(o.ClientSecret))
	}
	if h.HTTPHeaders != nil {
		for name, hd := range h.HTTPHeaders.Headers {
			if harmlessHeaders[http.CanonicalHeaderKey(name)] {
				continue
			}
			s.add(hd.Values...)
			for _, v := range hd.Secrets {
				s.add(string(v))
			}
		}
	}
	if pw, ok := u.User.Password(); ok {
		s.add(pw)
		s.addAuthorization("Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)))
	}
	if u.RawQuery != "" {
		s.add(u.RawQuery)
		for _, vs := range u.Query() {
			s.add(vs...)
		}
	}
}

// redact replaces every secret in msg with "xxxxx".
func (s *secrets) redact(msg string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.vals {
		msg = strings.ReplaceAll(msg, v, "xxxxx")
	}
	return msg
}

// echoed is what VictoriaMetrics puts before each of its error messages:
// the client's own address and the request's path (lib/httpserver's
// Errorf; the address a JSON string, with any X-Forwarded-For in it).
// The port changes from run to run, and the path is named
// beside the message: a report would differ between two runs.
var echoed = regexp.MustCompile(`^remoteAddr: "(?:[^"\\]|\\.)*"; requestURI: [^;]*; `)

// line is msg, a server's text, as it may be shown: its secrets redacted,
// without the request that VictoriaMetrics echoes (echoed), on one line
// of printable characters, at most maxMessage runes.
func (s *secrets) line(msg string) string {
	msg = s.redact(strings.ToValidUTF8(msg, "\uFFFD"))
	msg = echoed.ReplaceAllLiteralString(strings.TrimSpace(msg), "")
	var b strings.Builder
	n, space := 0, false
	for _, c := range msg {
		if unicode.IsSpace(c) || !unicode.IsPrint(c) {
			space = b.Len() > 0
			continue
		}
		if n >= maxMessage {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(c)
		n++
	}
	return b.String()
}

// attempt records what the transport saw of one request.
type attempt struct {
	mu         sync.Mutex
	status     int
	retryAfter time.Duration
	tooLarge   bool
	redirect   string // the redacted origin of a redirect to another origin
}

func (a *attempt) get() (int, time.Duration, bool, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status, a.retryAfter, a.tooLarge, a.redirect
}

func (a *attempt) setTooLarge() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.tooLarge = true
	a.mu.Unlock()
}

type attemptKey struct{}

// bodyClient is an api.Client that reads response bodies with readBody
// rather than into a buffer that doubles as it grows.
type bodyClient struct {
	api.Client
	hc *http.Client
}

func (c bodyClient) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	resp, err := c.hc.Do(req.WithContext(ctx))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	n := resp.ContentLength
	if resp.StatusCode/100 != 2 {
		n = -1 // the transport cuts an error body short
	}
	body, err := readBody(resp.Body, n)
	return resp, body, err
}

// readBody reads r whole, n bytes if n is not negative (the transport
// refuses a success body announced larger than the limit). A body of
// unknown length is read in blocks, copied once into a slice of its size:
// at most twice its size is held while it is read, and a body that the
// transport cuts as too large costs what was read of it, not the two or
// three times as much of a buffer that doubles as it grows.
func readBody(r io.Reader, n int64) ([]byte, error) {
	if n >= 0 {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return b, nil
	}
	var blocks [][]byte
	size, total := 16<<10, 0
	for done := false; !done; size = min(2*size, 4<<20) {
		b := make([]byte, size)
		k := 0
		for k < len(b) {
			m, err := r.Read(b[k:])
			k += m
			if err == io.EOF {
				done = true
				break
			}
			if err != nil {
				return nil, err
			}
		}
		blocks = append(blocks, b[:k])
		total += k
	}
	if len(blocks) == 1 {
		return blocks[0], nil
	}
	out := make([]byte, 0, total)
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out, nil
}
