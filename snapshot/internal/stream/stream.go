// Package stream reads the bytes of one metrics dump for the parser, and
// tells what bytes are when they are not an exposition.
//
// A dump is parsed from one byte slice (textparse needs the whole
// exposition), but a compressed file or a stream (standard input, a
// FIFO) is never held whole before it is judged: it is inflated in
// chunks, every inflated byte counts against the file's limit as it
// streams, and in a text exposition the lines the parser would skip
// anyway (comments other than HELP, TYPE, UNIT and EOF, and blank lines)
// are not kept. A gzip bomb of comment lines therefore costs its limit in
// time, not in memory: Read stops at the limit.
//
// The same pass normalises what the parser does not accept: CRLF line
// endings and a UTF-8 byte order mark. Line numbers and byte offsets in
// problems stay those of the original (decompressed) file: Map maps
// the kept bytes back.
package stream

import (
	"bytes"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"
)

// ChunkSize is how much is inflated at a time.
const ChunkSize = 64 << 10

// maxMapEntries bounds the entries of a Map. Past it, comment lines
// are kept (the file then costs what it inflates to, up to its limit) and
// CR positions are no longer tracked (offsets past that point are
// approximate; line numbers stay exact).
const maxMapEntries = 1 << 16

// Map maps offsets and line numbers of the kept bytes of a file to
// those of the original. The zero Map is the identity.
type Map struct {
	holes []hole
	// crRuns are the runs of original lines whose CRLF ending was
	// normalised to LF, in ascending order.
	crRuns    []lineRun
	CRLines   int64 // lines normalised in all
	crInexact bool  // crRuns stopped at maxMapEntries
	BOM       bool  // a UTF-8 byte order mark was removed
	NoNewline bool  // the input did not end with a newline; one was added
}

// hole says that before the kept byte at, lines lines and bytes bytes of
// the original were dropped in all (cumulative).
type hole struct{ at, lines, bytes int64 }

// lineRun is a run of original lines first..last (1-based, inclusive).
type lineRun struct{ first, last int64 }

// Orig maps a line number and line start offset in the kept bytes to
// those of the original.
func (m *Map) Orig(line int, start int64) (int, int64) {
	if i := sort.Search(len(m.holes), func(i int) bool { return m.holes[i].at > start }); i > 0 {
		h := m.holes[i-1]
		line += int(h.lines)
		start += h.bytes
	}
	// Every CR removed from an earlier original line shifts the offset.
	l := int64(line)
	for _, r := range m.crRuns {
		if r.first >= l {
			break
		}
		start += min(r.last, l-1) - r.first + 1
	}
	return line, start
}

// streamer keeps the bytes of one file that the parser needs, as they
// are inflated. The kept bytes grow in chunks, so that a file over its
// limit never costs more than the limit (no slice is ever copied to grow
// it); a file within its limit is joined once at the end.
type streamer struct {
	chunks [][]byte
	cur    []byte // the chunk being filled; never grows past its cap
	kept   int64  // bytes kept so far
	m      *Map
	drop   bool // drop comment and blank lines (text format only)

	state    int8   // stStart, stKeep or stDrop
	head     []byte // the start of the current line, until it decides
	pendCR   bool   // a kept CR not yet written: it may end a CRLF
	origLine int64  // 1-based original number of the current line

	runLines, runBytes int64 // the current run of dropped lines
	cumLines, cumBytes int64 // dropped before the run

	bin BinaryScan // of the kept bytes
}

const (
	stStart int8 = iota // at the start of a line, undecided
	stKeep
	stDrop
)

// MaxChunk bounds the chunks of a streamer.
const MaxChunk = 4 << 20

func newStreamer(m *Map, drop bool, sizeHint int) *streamer {
	return &streamer{cur: make([]byte, 0, sizeHint), m: m, drop: drop, origLine: 1}
}

// emit appends kept bytes.
func (s *streamer) emit(p []byte) {
	s.bin.Scan(p)
	s.kept += int64(len(p))
	for len(p) > 0 {
		if len(s.cur) == cap(s.cur) {
			s.chunks = append(s.chunks, s.cur)
			s.cur = make([]byte, 0, min(max(2*cap(s.cur), ChunkSize), MaxChunk))
		}
		n := copy(s.cur[len(s.cur):cap(s.cur)], p)
		s.cur = s.cur[:len(s.cur)+n]
		p = p[n:]
	}
}

var (
	nlByte = []byte{'\n'}
	crByte = []byte{'\r'}
)

// decide classifies the current line from its first bytes: stStart
// (undecided), stKeep or stDrop.
func (s *streamer) decide() int8 {
	h := s.head
	if len(h) == 0 {
		return stStart
	}
	if !s.drop {
		return stKeep
	}
	switch h[0] {
	case '\n':
		return stDrop
	case '\r':
		if len(h) < 2 {
			return stStart
		}
		if h[1] == '\n' {
			return stDrop
		}
		return stKeep
	case '#':
		i := 1
		for i < len(h) && (h[i] == ' ' || h[i] == '\t') {
			i++
		}
		if i == len(h) {
			if len(h) >= 16 {
				return stKeep
			}
			return stStart
		}
		switch h[i] {
		case 'H', 'T', 'U', 'E', '\n', '\r':
			// HELP, TYPE, UNIT, EOF, or a bare "#": the parser's business.
			return stKeep
		}
		return stDrop
	}
	return stKeep
}

// write takes the next inflated bytes.
func (s *streamer) write(p []byte) {
	for len(p) > 0 {
		if s.state != stStart {
			s.take1(&p)
			continue
		}
		// Take bytes into head until the line decides; most lines decide
		// on their first byte. head holds at most one newline, at its end.
		for len(p) > 0 && s.state == stStart {
			s.head = append(s.head, p[0])
			p = p[1:]
			s.state = s.decide()
			if s.state == stStart && s.head[len(s.head)-1] == '\n' {
				s.state = stKeep
			}
		}
		if s.state == stStart {
			return
		}
		h := s.head
		if s.state == stKeep {
			s.flushRun()
		}
		for len(h) > 0 {
			s.take1(&h)
		}
		s.head = s.head[:0]
	}
}

// take1 consumes bytes of the current decided line, up to and including
// its newline.
func (s *streamer) take1(p *[]byte) {
	b := *p
	nl := bytes.IndexByte(b, '\n')
	seg := b
	if nl >= 0 {
		seg = b[:nl+1]
	}
	*p = b[len(seg):]
	if s.state == stDrop {
		s.runBytes += int64(len(seg))
		if nl >= 0 {
			s.runLines++
			s.endLine()
		}
		return
	}
	if s.pendCR {
		s.pendCR = false
		if seg[0] == '\n' {
			s.emit(nlByte)
			s.noteCR()
			s.endLine()
			return
		}
		s.emit(crByte)
	}
	switch n := len(seg); {
	case nl >= 0 && n >= 2 && seg[n-2] == '\r':
		s.emit(seg[:n-2])
		s.emit(nlByte)
		s.noteCR()
	case nl < 0 && seg[n-1] == '\r':
		s.emit(seg[:n-1])
		s.pendCR = true
		return
	default:
		s.emit(seg)
	}
	if nl >= 0 {
		s.endLine()
	}
}

func (s *streamer) endLine() {
	s.origLine++
	s.state = stStart
}

// flushRun closes the current run of dropped lines before a kept line.
func (s *streamer) flushRun() {
	if s.runBytes == 0 {
		return
	}
	s.cumLines += s.runLines
	s.cumBytes += s.runBytes
	s.runLines, s.runBytes = 0, 0
	if n := len(s.m.holes); n > 0 && s.m.holes[n-1].at == s.kept {
		s.m.holes[n-1].lines, s.m.holes[n-1].bytes = s.cumLines, s.cumBytes
		return
	}
	s.m.holes = append(s.m.holes, hole{at: s.kept, lines: s.cumLines, bytes: s.cumBytes})
	if len(s.m.holes) >= maxMapEntries {
		// Too many holes: keep comment lines from here on.
		s.drop = false
	}
}

func (s *streamer) noteCR() {
	m := s.m
	m.CRLines++
	if m.crInexact {
		return
	}
	if n := len(m.crRuns); n > 0 && m.crRuns[n-1].last == s.origLine-1 {
		m.crRuns[n-1].last = s.origLine
		return
	}
	if len(m.crRuns) >= maxMapEntries {
		m.crInexact = true
		return
	}
	m.crRuns = append(m.crRuns, lineRun{first: s.origLine, last: s.origLine})
}

// finish ends the input: an undecided head is kept, a run of dropped
// lines is closed, a newline is added when the input lacked one, and the
// chunks are joined.
func (s *streamer) finish() []byte {
	if s.state == stStart && len(s.head) > 0 {
		s.state = stKeep
		h := s.head
		s.head = nil
		s.flushRun()
		s.emit(h)
	}
	s.flushRun()
	if s.pendCR {
		s.emit(crByte) // a CR at the very end is data
	}
	if s.state == stKeep {
		s.emit(nlByte)
		s.m.NoNewline = true
	}
	if len(s.chunks) == 0 {
		return s.cur
	}
	out := make([]byte, 0, s.kept)
	for i, c := range s.chunks {
		out = append(out, c...)
		s.chunks[i] = nil
	}
	return append(out, s.cur...)
}

// BinaryScan tells, as a file's bytes arrive, whether the check of the
// content will find binary data in them: a NUL byte anywhere, or invalid
// UTF-8 in the first UTF8Head bytes. A reader stops there instead of reading the rest
// (a file of zeros behind one good line, /dev/urandom).
type BinaryScan struct {
	head  []byte // the first bytes, until UTF8Head of them are judged
	n     int64  // bytes scanned
	found bool
}

// UTF8Head is how much of a file the check of the content checks for
// invalid UTF-8.
const UTF8Head = 4096

// Scan takes the next bytes and reports whether binary data were found
// so far.
func (s *BinaryScan) Scan(p []byte) bool {
	if s.found {
		return true
	}
	if bytes.IndexByte(p, 0) >= 0 {
		s.found = true
		return true
	}
	if s.n < UTF8Head {
		k := min(int64(len(p)), UTF8Head-s.n)
		s.head = append(s.head, p[:k]...)
		if len(s.head) == UTF8Head {
			s.found = BinaryHead(s.head) >= 0
			s.head = nil
		}
	}
	s.n += int64(len(p))
	return s.found
}

// NeedsNormalising reports whether in-memory data holds what Read
// normalises: a byte order mark or a CR before a newline.
func NeedsNormalising(data []byte) bool {
	return bytes.HasPrefix(data, bom) || bytes.Contains(data, []byte("\r\n"))
}

// BinaryHead returns the offset of the first invalid UTF-8 in head, the
// first bytes of a file, or -1: a multi-byte rune cut at the very end of
// head is not binary.
func BinaryHead(head []byte) int {
	if utf8.Valid(head) {
		return -1
	}
	if i := invalidUTF8(head); i >= 0 && i < len(head)-utf8.UTFMax {
		return i
	}
	return -1
}

// UTF16 returns "UTF-16LE" or "UTF-16BE" when data starts like UTF-16
// text (a byte order mark, or ASCII with every other byte zero), else "".
func UTF16(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		return "UTF-16LE"
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		return "UTF-16BE"
	}
	head := data[:min(len(data), 256)&^1]
	if len(head) < 8 {
		return ""
	}
	var even, odd int
	for i := 0; i < len(head); i += 2 {
		if head[i] == 0 && head[i+1] != 0 {
			even++
		}
		if head[i+1] == 0 && head[i] != 0 {
			odd++
		}
	}
	switch half := len(head) / 2; {
	case odd >= half*9/10:
		return "UTF-16LE"
	case even >= half*9/10:
		return "UTF-16BE"
	}
	return ""
}

// LooksLikeJSON reports whether data (trimmed of leading space) starts
// like a JSON document: "[", or "{" followed by a quoted key and a colon
// or by "}". An exposition line may start with "{" too (a quoted UTF-8
// metric name, {"my.metric",le="1"} 3), but never with a key and colon.
func LooksLikeJSON(data []byte) bool {
	if len(data) == 0 {
		return false
	}
	switch data[0] {
	case '[':
		return true
	case '{':
	default:
		return false
	}
	rest := bytes.TrimLeft(data[1:], " \t\r\n")
	if len(rest) > 0 && rest[0] == '}' {
		return true
	}
	if len(rest) == 0 || rest[0] != '"' {
		return false
	}
	q, err := strconv.QuotedPrefix(string(rest[:min(len(rest), 1024)]))
	if err != nil {
		return false
	}
	rest = bytes.TrimLeft(rest[len(q):], " \t\r\n")
	return len(rest) > 0 && rest[0] == ':'
}

func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// Dropped reports whether bytes of the file were left out (comment lines,
// a byte order mark).
func (m *Map) Dropped() bool { return len(m.holes) > 0 }

// Read reads r, the (decompressed) content of one file, for the parser,
// keeping m up to date. decide is told the first bytes (up to headSize)
// and returns the file's byte limit, the bytes left of the reader's
// budget, and whether comment and blank lines are dropped (text format
// only). Reading stops past the limit or the budget, where kept is nil,
// and at binary data among the kept bytes. total is the bytes read. A
// read error returns what was kept before it, and the error.
func Read(r io.Reader, m *Map, sizeHint int64, headSize int, decide func(head []byte) (limit, budget int64, drop bool)) (kept []byte, total int64, err error) {
	head := make([]byte, 0, max(headSize, ChunkSize))
	for len(head) < headSize && err == nil {
		var k int
		k, err = r.Read(head[len(head):headSize])
		head = head[:len(head)+k]
	}
	total = int64(len(head))
	limit, budget, drop := decide(head)
	hint := min(sizeHint, limit) + 1
	if sizeHint <= 0 || hint > MaxChunk {
		hint = ChunkSize // grow as needed: a compressed or unknown size says little
	}
	s := newStreamer(m, drop, int(hint))
	if bytes.HasPrefix(head, bom) {
		m.BOM = true
		s.cumBytes = int64(len(bom))
		m.holes = append(m.holes, hole{at: 0, bytes: s.cumBytes})
		s.write(head[len(bom):])
	} else {
		s.write(head)
	}
	buf := head[:ChunkSize] // head is copied out: reuse its memory
	// Binary data among the kept bytes stop the read: the check of the
	// content reports them, and the rest is not worth reading.
	for err == nil && total <= limit && total <= budget && !s.bin.found {
		var k int
		k, err = r.Read(buf)
		total += int64(k)
		s.write(buf[:k])
	}
	if err == io.EOF {
		err = nil
	}
	if total > limit || total > budget {
		return nil, total, nil
	}
	return s.finish(), total, err
}

var bom = []byte("\ufeff")
