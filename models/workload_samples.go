package models

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/optd/optd/models/trace"
)

// maxSampleLine bounds the length of one line of a sample file.
const maxSampleLine = 1 << 20

// bytesPerMB is the unit of data samples taken from a trace file: X is the
// job's shuffle size in MB of 2^20 bytes (the unit the Coflow trace records).
const bytesPerMB = 1 << 20

// readSamples reads the samples of an empirical{file} law. It is the one place
// where sample-file formats are told apart:
//
//   - a trace file that package trace recognizes by its content (SWIM TSV,
//     Coflow, the Mumak attempts CSV; see data/README.md): one sample
//     per job with a shuffle, X = the job's shuffle bytes / 2^20 (MB). Map-only
//     jobs (shuffle 0) have no reducers to place and are left out;
//   - otherwise plain text with one number per line, where blank lines and
//     everything after a '#' are ignored.
//
// Every number must be finite and ≥ 0 and there must be at least one. Errors
// name the file and, for a bad line, "path:line".
func readSamples(path string) ([]float64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if _, err := trace.Detect(path); err == nil {
		return traceShuffleSamples(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseSampleLines(f, path)
}

// parseSampleLines parses the one-number-per-line format from f.
func parseSampleLines(f io.Reader, path string) ([]float64, error) {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), maxSampleLine)
	var samples []float64
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		v, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("%s:%d: %q is not a number", path, line, text)
		}
		if !isFinite(v) || v < 0 {
			return nil, fmt.Errorf("%s:%d: %s: must be a finite number ≥ 0", path, line, text)
		}
		samples = append(samples, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("%s: no samples", path)
	}
	return samples, nil
}

// traceShuffleSamples returns the nonzero shuffle sizes, in MB, of the jobs of
// a trace file.
func traceShuffleSamples(path string) ([]float64, error) {
	jobs, err := trace.ReadFile(path, trace.Options{})
	if err != nil {
		return nil, err
	}
	samples := make([]float64, 0, len(jobs))
	for _, j := range jobs {
		if j.ShuffleBytes > 0 {
			samples = append(samples, j.ShuffleBytes/bytesPerMB)
		}
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("%s: no job with shuffle data", path)
	}
	return samples, nil
}
