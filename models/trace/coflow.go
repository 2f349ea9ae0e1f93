package trace

import (
	"io"
	"strconv"
	"strings"
)

// ReadCoflow reads a Coflow-Benchmark trace (e.g. FB2010-1Hr-150-0.txt).
// The first line is the header "<racks> <coflows>"; each further line is one
// coflow, space-separated:
//
//	<id> <arrival_ms> <M> <mapper rack 1> ... <mapper rack M> <R> <rack:shuffle_MB 1> ... <rack:shuffle_MB R>
//
// The benchmark merges all mappers of a job that sit in one rack into a
// single rack-level mapper, and likewise for reducers, so Maps = M and
// Reduces = R count racks, not tasks: Maps is the number of mapper racks
// listed and Reduces the number of reducer racks (Derived is false, since
// both are listed). ReducerShuffleBytes[k] is the shuffle volume of the
// reducer in rack ReducerRacks[k], and ShuffleBytes is their sum.
//
// Units: arrival_ms is milliseconds (SubmitS = arrival_ms/1000). The trace
// gives shuffle sizes in "MB", accurate to the nearest MB, without saying
// which MB; optd assumes MB = 2^20 bytes (MiB), so bytes = shuffle_MB·2^20.
// InputBytes and OutputBytes are not recorded and stay 0.
//
// Validation: rack indices are integers in [0, racks) and distinct within a
// list; M ≥ 1 and R ≥ 1; ids are unique; the number of coflow lines must
// equal the header's count. Blank lines are skipped. opts is validated but
// not otherwise used.
func ReadCoflow(r io.Reader, opts Options) ([]Job, error) {
	return readCoflow(r, "", opts)
}

func readCoflow(r io.Reader, file string, opts Options) ([]Job, error) {
	if _, err := opts.withDefaults(); err != nil {
		return nil, err
	}
	lr := newLineReader(r, file)
	header, ok := lr.next()
	if !ok {
		if err := lr.err(); err != nil {
			return nil, err
		}
		lr.line = 1
		return nil, lr.errorf("header", "", `missing: want "<racks> <coflows>"`)
	}
	headerLine := lr.line
	h := strings.Fields(header)
	if len(h) != 2 {
		return nil, lr.errorf("header", header, `has %d fields, want 2: "<racks> <coflows>"`, len(h))
	}
	racks, err := parseCount(h[0])
	if err == nil && racks == 0 {
		err = errNotPositive
	}
	if err != nil {
		return nil, lr.errorf("racks", h[0], "%v", err)
	}
	announced, err := parseCount(h[1])
	if err != nil {
		return nil, lr.errorf("coflows", h[1], "%v", err)
	}

	seen := make(map[string]int)
	jobs := make([]Job, 0, min(announced, 1<<16))
	// rackSeen holds the racks of the list being parsed.
	rackSeen := make(map[int]struct{})
	parseRack := func(field, v string) (int, error) {
		k, err := parseCount(v)
		if err != nil {
			return 0, lr.errorf(field, v, "%v", err)
		}
		if k >= racks {
			return 0, lr.errorf(field, v, "rack index out of range [0, %d)", racks)
		}
		if _, dup := rackSeen[k]; dup {
			return 0, lr.errorf(field, v, "rack listed twice")
		}
		rackSeen[k] = struct{}{}
		return k, nil
	}
	for {
		line, ok := lr.next()
		if !ok {
			break
		}
		t := strings.Fields(line)
		if len(t) < 5 {
			return nil, lr.errorf("record", line, "has %d fields, want at least 5: <id> <arrival_ms> <M> <mapper racks> <R> <reducers>", len(t))
		}
		id := t[0]
		if first, dup := seen[id]; dup {
			return nil, lr.errorf("coflow_id", id, "duplicate coflow id (first on line %d)", first)
		}
		seen[id] = lr.line
		arrivalMs, err := lr.parseBytes("arrival_ms", t[1])
		if err != nil {
			return nil, err
		}
		m, err := parseCount(t[2])
		if err == nil && m == 0 {
			err = errNotPositive
		}
		if err != nil {
			return nil, lr.errorf("mappers", t[2], "%v", err)
		}
		if len(t) < 4+m {
			return nil, lr.errorf("mappers", t[2], "announces %d mapper racks but the line ends after %d fields", m, len(t)-3)
		}
		rt := t[3+m]
		red, err := parseCount(rt)
		if err == nil && red == 0 {
			err = errNotPositive
		}
		if err != nil {
			return nil, lr.errorf("reducers", rt, "%v", err)
		}
		if got := len(t) - 4 - m; got != red {
			return nil, lr.errorf("reducers", rt, "announces %d reducers but the line lists %d", red, got)
		}
		j := Job{
			ID:                  id,
			SubmitS:             arrivalMs / 1000,
			Maps:                m,
			Reduces:             red,
			MapperRacks:         make([]int, m),
			ReducerRacks:        make([]int, red),
			ReducerShuffleBytes: make([]float64, red),
		}
		clear(rackSeen)
		for i, v := range t[3 : 3+m] {
			if j.MapperRacks[i], err = parseRack("mapper_rack", v); err != nil {
				return nil, err
			}
		}
		clear(rackSeen)
		for i, v := range t[4+m:] {
			rack, mb, found := strings.Cut(v, ":")
			if !found {
				return nil, lr.errorf("reducer", v, "want <rack>:<shuffle_MB>")
			}
			if j.ReducerRacks[i], err = parseRack("reducer_rack", rack); err != nil {
				return nil, err
			}
			x, err := lr.parseBytes("shuffle_mb", mb)
			if err != nil {
				return nil, err
			}
			j.ReducerShuffleBytes[i] = x * MiB
			j.ShuffleBytes += j.ReducerShuffleBytes[i]
		}
		jobs = append(jobs, j)
	}
	if err := lr.err(); err != nil {
		return nil, err
	}
	if len(jobs) != announced {
		lr.line = headerLine
		return nil, lr.errorf("coflows", strconv.Itoa(announced), "header announces %d coflows, the file has %d", announced, len(jobs))
	}
	sortBySubmit(jobs)
	return jobs, nil
}
