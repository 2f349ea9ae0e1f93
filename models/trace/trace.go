// Package trace reads the public MapReduce workload traces that optd replays
// (shipped in the repository's data/, see data/README.md for their provenance): SWIM's synthesized
// Facebook days (FB-2009, FB-2010), the Coflow-Benchmark's rack-level shuffle
// trace (FB2010-1Hr-150-0) and a per-attempt flattening of Hadoop Mumak's
// 19-job Rumen trace.
//
// Every reader returns the same Job record, in submit order, with the fields
// its format records and the rest left at zero. Where a format has no task
// counts they are derived from byte sizes (Job.Derived says so):
//
//   - maps    = ⌈InputBytes / BlockBytes⌉, at least 1 (input split into
//     HDFS blocks, as SWIM's replay does);
//   - reduces = 0 when ShuffleBytes = 0 (a map-only job), otherwise
//     max(1, round((ShuffleBytes + OutputBytes) / BytesPerReduce)), the rule
//     of SWIM's GenerateReplayScript.java (numReduces = Math.round((shuffle +
//     output) / totalDataPerReduce), at least 1).
//
// SWIM's replay itself never produces map-only jobs: it raises shuffle and
// output to at least 1 KiB and input to at least 64 MiB before applying the
// rule. optd instead reads shuffle = 0 as a map-only job, as the data README
// does when it counts map-only jobs.
//
// The package is a leaf: it imports only the standard library, so the domain
// package models can build on it without a cycle. Malformed input yields a
// *ParseError naming the file, line, field and value; it wraps ErrMalformed.
package trace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/optd/optd/internal/errkind"
)

// Format names a trace format.
type Format string

// The formats this package reads.
const (
	// FormatSWIM is SWIM's workload-suite TSV: one job per line with six
	// tab-separated fields (job id, submit s, gap s, input, shuffle and output
	// bytes), no header.
	FormatSWIM Format = "swim"
	// FormatCoflow is the Coflow-Benchmark text format: a header line
	// "<racks> <coflows>", then one coflow per line.
	FormatCoflow Format = "coflow"
	// FormatMumak is the per-attempt CSV flattening of the Mumak Rumen trace
	// (19-jobs.attempts.csv), with the header MumakHeader.
	FormatMumak Format = "mumak"
)

// Package sentinels. Errors about the content or the options wrap one of
// them; I/O errors (a missing file, a failing reader, corrupt gzip) are
// returned wrapped with the file name instead.
var (
	// ErrMalformed: the input does not follow its format. Except for a ".gz"
	// file that is not gzip, the error is a *ParseError with the position and
	// the offending value.
	ErrMalformed = errkind.New(errkind.Invalid, "trace: malformed input")
	// ErrUnknownFormat: Detect could not recognise the content.
	ErrUnknownFormat = errkind.New(errkind.Invalid, "trace: unknown format")
	// ErrInvalidOptions: an Options field is out of range.
	ErrInvalidOptions = errkind.New(errkind.Invalid, "trace: invalid options")
)

// Byte units used by the derivation rules and the Coflow reader.
const (
	// MiB is 2^20 bytes. The Coflow trace states shuffle sizes in "MB"
	// without saying which; optd reads them as MiB (see ReadCoflow).
	MiB = 1 << 20
	// GiB is 2^30 bytes.
	GiB = 1 << 30
)

// Defaults for zero-valued Options fields.
const (
	DefaultBlockBytes     = 128 * MiB
	DefaultBytesPerReduce = 1 * GiB
)

// maxTasks bounds derived and counted task numbers, so that a corrupt byte
// count cannot ask a simulator for billions of tasks.
const maxTasks = math.MaxInt32

// Options controls the derivation of task counts. The zero value uses the
// documented defaults. Only ReadSWIM derives counts; the Coflow and Mumak
// readers validate Options but do not use them.
type Options struct {
	// BlockBytes is the input bytes per map task for derived map counts
	// (maps = ⌈input/BlockBytes⌉, at least 1). 0 means DefaultBlockBytes
	// (128 MiB, the HDFS block size of Hadoop 2).
	BlockBytes float64
	// BytesPerReduce is the (shuffle + output) bytes per reduce task for
	// derived reduce counts (SWIM's totalDataPerReduce). 0 means
	// DefaultBytesPerReduce (1 GiB).
	BytesPerReduce float64
}

// withDefaults validates o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	check := func(name string, v *float64, def float64) error {
		switch {
		case *v == 0:
			*v = def
		case math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0:
			return fmt.Errorf("%w: %s = %g: must be a positive finite number of bytes (0 means %.0f)", ErrInvalidOptions, name, *v, def)
		}
		return nil
	}
	if err := check("BlockBytes", &o.BlockBytes, DefaultBlockBytes); err != nil {
		return o, err
	}
	if err := check("BytesPerReduce", &o.BytesPerReduce, DefaultBytesPerReduce); err != nil {
		return o, err
	}
	return o, nil
}

// Job is one job (or coflow) of a trace. Byte fields are zero where the
// format does not record them.
type Job struct {
	// ID is the trace's job identifier (SWIM "jobN", the coflow id, Rumen's
	// job_YYYYMMDDhhmm_NNNN).
	ID string `json:"id"`
	// SubmitS is the arrival time in seconds from the start of the trace:
	// SWIM's cumulative submit time as recorded, the coflow arrival (ms/1000),
	// or for Mumak the job's submit time minus the earliest job's, /1000.
	SubmitS float64 `json:"submit_s"`
	// InputBytes is the map input (SWIM; Mumak: HDFS bytes read by successful
	// map attempts). Not recorded by Coflow.
	InputBytes float64 `json:"input_bytes"`
	// ShuffleBytes is the intermediate data sent from maps to reduces (X in
	// Tan et al., INFOCOM'13).
	ShuffleBytes float64 `json:"shuffle_bytes"`
	// OutputBytes is the job output (SWIM: reduce output; Mumak: HDFS bytes
	// written by successful attempts). Not recorded by Coflow.
	OutputBytes float64 `json:"output_bytes"`
	// Maps and Reduces are the task counts (Coflow: rack-level mappers and
	// reducers, see ReadCoflow).
	Maps    int `json:"maps"`
	Reduces int `json:"reduces"`
	// Derived reports that Maps and Reduces were computed from byte sizes by
	// the package rules rather than read from the trace.
	Derived bool `json:"derived"`
	// ReducerShuffleBytes holds the bytes fetched by each reducer where the
	// trace records them (Coflow: per listed rack-level reducer, parallel to
	// ReducerRacks; Mumak: reduce_shuffle_bytes of each successful reduce
	// attempt that recorded it, in file order). Nil otherwise.
	ReducerShuffleBytes []float64 `json:"reducer_shuffle_bytes,omitempty"`
	// MapperRacks and ReducerRacks are the Coflow rack indices (0-based,
	// below the header's rack count) of the job's mappers and reducers.
	MapperRacks  []int `json:"mapper_racks,omitempty"`
	ReducerRacks []int `json:"reducer_racks,omitempty"`
	// Attempts are the Mumak task attempts of the job, in file order.
	Attempts []Attempt `json:"attempts,omitempty"`
}

// Task types and attempt results as the Mumak CSV spells them.
const (
	TaskMap       = "MAP"
	TaskReduce    = "REDUCE"
	ResultSuccess = "SUCCESS"
	ResultFailed  = "FAILED"
	ResultKilled  = "KILLED"
	NotRecorded   = -1 // Rumen's marker for a value that was not recorded
)

// Attempt is one row of the Mumak attempts CSV: one attempt of one task.
// Times are epoch milliseconds and byte counts are bytes, as in Rumen; every
// numeric field may be NotRecorded (-1).
type Attempt struct {
	TaskID    string `json:"task_id"`
	Type      string `json:"type"` // TaskMap or TaskReduce
	AttemptID string `json:"attempt_id"`
	Result    string `json:"result"` // ResultSuccess, ResultFailed or ResultKilled
	Rack      string `json:"rack"`
	Host      string `json:"host"`

	TaskStartMs       int64 `json:"task_start_ms"`
	TaskFinishMs      int64 `json:"task_finish_ms"`
	StartMs           int64 `json:"start_ms"`
	FinishMs          int64 `json:"finish_ms"`
	ShuffleFinishedMs int64 `json:"shuffle_finished_ms"`

	HDFSBytesRead      int64 `json:"hdfs_bytes_read"`
	HDFSBytesWritten   int64 `json:"hdfs_bytes_written"`
	FileBytesRead      int64 `json:"file_bytes_read"`
	FileBytesWritten   int64 `json:"file_bytes_written"`
	MapOutputBytes     int64 `json:"map_output_bytes"`
	ReduceShuffleBytes int64 `json:"reduce_shuffle_bytes"`
}

// ParseError reports malformed input: where (File, Line; File is empty for
// the io.Reader functions), which field, its raw value and why it was
// rejected. It wraps ErrMalformed.
type ParseError struct {
	File   string
	Line   int
	Field  string
	Value  string
	Reason string
}

// maxValueLen bounds the quoted value in error messages.
const maxValueLen = 64

// Error formats as `trace: FILE:LINE: FIELD = "VALUE": REASON` (or
// `trace: line LINE: ...` without a file name).
func (e *ParseError) Error() string {
	pos := fmt.Sprintf("line %d", e.Line)
	if e.File != "" {
		pos = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	v := e.Value
	if len(v) > maxValueLen {
		v = v[:maxValueLen] + "..."
	}
	return fmt.Sprintf("trace: %s: %s = %q: %s", pos, e.Field, v, e.Reason)
}

// Unwrap returns ErrMalformed.
func (e *ParseError) Unwrap() error { return ErrMalformed }

// source tracks the position in one input for error messages.
type source struct {
	file string
	line int
}

// name returns the file name, or "input" for an io.Reader.
func (s *source) name() string {
	if s.file == "" {
		return "input"
	}
	return s.file
}

func (s *source) errorf(field, value, format string, args ...any) error {
	return &ParseError{File: s.file, Line: s.line, Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// lineReader yields the lines of an input (without "\n" or "\r\n"),
// counting them for error messages.
type lineReader struct {
	source
	sc *bufio.Scanner
}

// maxLineBytes bounds one line. The longest Coflow line is about 2 KB.
const maxLineBytes = 16 << 20

func newLineReader(r io.Reader, file string) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	return &lineReader{source: source{file: file}, sc: sc}
}

// next returns the next line that is not blank; ok is false at the end of
// the input or on a read error (see err).
func (l *lineReader) next() (line string, ok bool) {
	for l.sc.Scan() {
		l.line++
		b := bytes.TrimSuffix(l.sc.Bytes(), []byte{'\r'})
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		return string(b), true
	}
	return "", false
}

// err reports a read error, positioned after the last line read.
func (l *lineReader) err() error {
	err := l.sc.Err()
	if err == nil {
		return nil
	}
	if errors.Is(err, bufio.ErrTooLong) {
		l.line++
		return l.errorf("line", "", "longer than %d bytes", maxLineBytes)
	}
	return fmt.Errorf("trace: reading %s after line %d: %w", l.name(), l.line, err)
}

// parseBytes parses a byte count or size: a finite number ≥ 0.
func (s *source) parseBytes(field, v string) (float64, error) {
	x, err := parseFloat(v)
	if err != nil {
		return 0, s.errorf(field, v, "%v", err)
	}
	if x < 0 {
		return 0, s.errorf(field, v, "negative")
	}
	return x, nil
}

var (
	errNotNumber   = errors.New("not a number")
	errNotFinite   = errors.New("not finite")
	errOutOfRange  = errors.New("out of the range of float64")
	errNotInteger  = errors.New("not an integer")
	errNegative    = errors.New("negative")
	errNotPositive = errors.New("must be at least 1")
)

// parseCount parses a non-negative decimal integer that fits an int.
func parseCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errNotInteger
	}
	if n < 0 {
		return 0, errNegative
	}
	return n, nil
}

func parseFloat(v string) (float64, error) {
	x, err := strconv.ParseFloat(v, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, errOutOfRange
	}
	if err != nil {
		return 0, errNotNumber
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, errNotFinite
	}
	return x, nil
}

// deriveMaps is ⌈input/block⌉, at least 1.
func (s *source) deriveMaps(field, raw string, input, block float64) (int, error) {
	m := math.Max(1, math.Ceil(input/block))
	if m > maxTasks {
		return 0, s.errorf(field, raw, "derives %.4g maps at %.0f bytes per block, more than %d", m, block, maxTasks)
	}
	return int(m), nil
}

// deriveReduces is 0 when shuffle = 0, else max(1, round((shuffle+output)/perReduce)).
func (s *source) deriveReduces(field, raw string, shuffle, output, perReduce float64) (int, error) {
	if shuffle == 0 {
		return 0, nil
	}
	r := math.Max(1, math.Round((shuffle+output)/perReduce))
	if r > maxTasks {
		return 0, s.errorf(field, raw, "derives %.4g reduces at %.0f bytes per reduce, more than %d", r, perReduce, maxTasks)
	}
	return int(r), nil
}

// sortBySubmit orders jobs by SubmitS, keeping the file order among equal
// times.
func sortBySubmit(jobs []Job) {
	cmp := func(a, b Job) int {
		switch {
		case a.SubmitS < b.SubmitS:
			return -1
		case a.SubmitS > b.SubmitS:
			return 1
		}
		return 0
	}
	if !slices.IsSortedFunc(jobs, cmp) {
		slices.SortStableFunc(jobs, cmp)
	}
}

// MumakHeader is the header line of the Mumak attempts CSV.
const MumakHeader = "job_id,job_submit_ms,task_id,task_type,task_start_ms,task_finish_ms,attempt_id," +
	"attempt_result,rack,host,attempt_start_ms,attempt_finish_ms,shuffle_finished_ms,hdfs_bytes_read," +
	"hdfs_bytes_written,file_bytes_read,file_bytes_written,map_output_bytes,reduce_shuffle_bytes"

// sniffBytes is how much of the (decompressed) input Detect looks at.
const sniffBytes = 64 << 10

// sniff recognises a format from the first line of the content:
// the Mumak CSV header; a SWIM record (6 tab-separated fields, numbers after
// the id); or the Coflow header (exactly two non-negative integers).
func sniff(name string, prefix []byte) (Format, error) {
	first := prefix
	for len(first) > 0 {
		var line []byte
		line, first, _ = bytes.Cut(first, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		s := string(line)
		switch {
		case strings.HasPrefix(s, "job_id,job_submit_ms,task_id,"):
			return FormatMumak, nil
		case looksSWIM(s):
			return FormatSWIM, nil
		case looksCoflowHeader(s):
			return FormatCoflow, nil
		}
		if len(s) > maxValueLen {
			s = s[:maxValueLen] + "..."
		}
		return "", fmt.Errorf("%w: %s: first line %q is none of: swim (6 tab-separated fields: job id, submit_s, gap_s, input, shuffle, output bytes), "+
			"coflow (header \"<racks> <coflows>\"), mumak (CSV header \"job_id,job_submit_ms,task_id,...\")", ErrUnknownFormat, name, s)
	}
	return "", fmt.Errorf("%w: %s: no non-blank line in the first %d bytes", ErrUnknownFormat, name, sniffBytes)
}

func looksSWIM(line string) bool {
	f := strings.Split(line, "\t")
	if len(f) != swimFields || f[0] == "" {
		return false
	}
	for _, v := range f[1:] {
		if _, err := parseFloat(v); err != nil {
			return false
		}
	}
	return true
}

func looksCoflowHeader(line string) bool {
	f := strings.Fields(line)
	if len(f) != 2 {
		return false
	}
	for _, v := range f {
		if _, err := parseCount(v); err != nil {
			return false
		}
	}
	return true
}

// open opens path, transparently decompressing gzip (recognised by its
// magic bytes; a name ending in ".gz" must be gzip).
func open(path string) (*bufio.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("trace: %w", err)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	magic, _ := br.Peek(2)
	if !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		if strings.HasSuffix(path, ".gz") {
			_ = f.Close()
			return nil, nil, fmt.Errorf("%w: %s: name ends in .gz but content is not gzip", ErrMalformed, path)
		}
		return br, f.Close, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("trace: %s: %w", path, err)
	}
	return bufio.NewReaderSize(zr, 64<<10), func() error {
		return errors.Join(zr.Close(), f.Close())
	}, nil
}

// Detect reports the format of the file at path from its content (the first
// non-blank line, after gzip decompression), whatever its extension.
func Detect(path string) (Format, error) {
	r, closeFn, err := open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = closeFn() }()
	return detect(path, r)
}

func detect(path string, br *bufio.Reader) (Format, error) {
	prefix, err := br.Peek(sniffBytes)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return "", fmt.Errorf("trace: %s: %w", path, err)
	}
	return sniff(path, prefix)
}

// ReadFile detects the format of the file at path (see Detect) and reads it
// with the matching reader. Files compressed with gzip are decompressed.
// Errors name the file.
func ReadFile(path string, opts Options) ([]Job, error) {
	r, closeFn, err := open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = closeFn() }()
	format, err := detect(path, r)
	if err != nil {
		return nil, err
	}
	switch format {
	case FormatSWIM:
		return readSWIM(r, path, opts)
	case FormatCoflow:
		return readCoflow(r, path, opts)
	default:
		return readMumakAttempts(r, path, opts)
	}
}

// Stats summarises a trace with the figures the data README quotes.
type Stats struct {
	Jobs int `json:"jobs"`
	// LastSubmitS is the largest SubmitS (the trace's span from its start).
	LastSubmitS float64 `json:"last_submit_s"`
	// MapOnlyFraction is the fraction of jobs with no reduce task.
	MapOnlyFraction   float64 `json:"map_only_fraction"`
	TotalInputBytes   float64 `json:"total_input_bytes"`
	TotalShuffleBytes float64 `json:"total_shuffle_bytes"`
	TotalOutputBytes  float64 `json:"total_output_bytes"`
}

// Summarize computes the Stats of jobs.
func Summarize(jobs []Job) Stats {
	var s Stats
	mapOnly := 0
	for _, j := range jobs {
		s.LastSubmitS = math.Max(s.LastSubmitS, j.SubmitS)
		if j.Reduces == 0 {
			mapOnly++
		}
		s.TotalInputBytes += j.InputBytes
		s.TotalShuffleBytes += j.ShuffleBytes
		s.TotalOutputBytes += j.OutputBytes
	}
	s.Jobs = len(jobs)
	if s.Jobs > 0 {
		s.MapOnlyFraction = float64(mapOnly) / float64(s.Jobs)
	}
	return s
}
