package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/optd/optd/internal/testenv"
	"github.com/optd/optd/models/trace"
)

// equalWorkloads reports how a and b differ as laws ("" if they do not):
// same MaxReduces and E[X], and for each R the same P[R = r] and the same law
// of Y (kind, mean, atoms, or CDF at a few points).
func equalWorkloads(a, b *Workload) string {
	if a.MaxReduces() != b.MaxReduces() || a.MeanData() != b.MeanData() || a.IsJoint() != b.IsJoint() {
		return "MaxReduces, MeanData or IsJoint differ"
	}
	ca, cb := a.Conditionals(), b.Conditionals()
	if len(ca) != len(cb) {
		return "numbers of conditionals differ"
	}
	for i := range ca {
		x, y := ca[i], cb[i]
		if x.R != y.R || x.Prob != y.Prob || x.Y.Kind() != y.Y.Kind() || x.Y.Mean() != y.Y.Mean() {
			return "conditional " + x.Y.Kind() + " differs"
		}
		if ax, ok := x.Y.(Atomic); ok {
			vx, px := ax.Atoms()
			vy, py := y.Y.(Atomic).Atoms()
			if !slices.Equal(vx, vy) || !slices.Equal(px, py) {
				return "atoms differ"
			}
			continue
		}
		m := x.Y.Mean()
		for _, q := range []float64{0, m / 10, m, 3 * m} {
			if x.Y.CDF(q) != y.Y.CDF(q) || x.Y.PartialMean(q, math.Inf(1)) != y.Y.PartialMean(q, math.Inf(1)) {
				return "continuous laws differ"
			}
		}
	}
	return ""
}

func testdataJSON(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(testdataDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	return files
}

// TestJSONRoundTrip decodes every example, encodes it, decodes the encoding:
// the two workloads are equal and the second encoding is byte-identical.
func TestJSONRoundTrip(t *testing.T) {
	for _, file := range testdataJSON(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			w1, err := LoadWorkload(file)
			if err != nil {
				t.Fatal(err)
			}
			b1, err := json.Marshal(w1)
			if err != nil {
				t.Fatal(err)
			}
			w2, err := DecodeWorkload(b1, testdataDir)
			if err != nil {
				t.Fatalf("re-decode %s: %v", b1, err)
			}
			if diff := equalWorkloads(w1, w2); diff != "" {
				t.Errorf("round trip: %s\n%s", diff, b1)
			}
			b2, _ := json.Marshal(w2)
			if !bytes.Equal(b1, b2) {
				t.Errorf("encodings differ:\n%s\n%s", b1, b2)
			}
			// The encoding says the same as the file (up to layout).
			var fromFile, encoded any
			raw, _ := os.ReadFile(file)
			if json.Unmarshal(raw, &fromFile) != nil || json.Unmarshal(b1, &encoded) != nil {
				t.Fatal("unparsable")
			}
			if !jsonEqual(fromFile, encoded) {
				t.Errorf("encoding %s differs from the file %s", b1, raw)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a) // map keys are sorted
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestMarshalConstructed(t *testing.T) {
	w, err := NewIndependentWorkload(must(NewGamma(2, 0.5)), must(NewUniformInt(1, 4)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"data":{"kind":"gamma","shape":2,"scale":0.5},"reduces":{"kind":"uniform-int","min":1,"max":4}}`
	if string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}

	// Empirical laws encode their samples (sorted, with repeats), scaled ones
	// the scaled law.
	w, _ = NewIndependentWorkload(Scale(must(NewEmpirical([]float64{4, 1, 4})), 2), must(NewDiscreteReduces([]int{2, 1}, []float64{0.5, 0.5})))
	b, _ = json.Marshal(w)
	const want2 = `{"data":{"kind":"empirical","samples":[2,8,8]},"reduces":{"kind":"discrete","values":[2,1],"probs":[0.5,0.5]}}`
	if string(b) != want2 {
		t.Errorf("Marshal = %s, want %s", b, want2)
	}

	pts := []JointPoint{{10, 1, 0.25}, {40, 2, 0.75}}
	w, err = NewJointWorkload(pts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(w)
	const want3 = `{"joint":[{"data":10,"reduces":1,"prob":0.25},{"data":40,"reduces":2,"prob":0.75}]}`
	if string(b) != want3 {
		t.Errorf("Marshal = %s, want %s", b, want3)
	}

	// Every law constructed in Go survives encode + decode.
	for name, d := range scaleTestLaws(t) {
		if strings.HasPrefix(name, "opaque") {
			continue
		}
		w, err := NewIndependentWorkload(Scale(d, 3), must(NewUniformInt(2, 3)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w2, err := DecodeWorkload(b, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := equalWorkloads(w, w2); diff != "" {
			// Parameters go through JSON exactly; only atoms may be merged
			// differently, which equalWorkloads would report.
			t.Errorf("%s: %s: %s", name, diff, b)
		}
	}

	// A law from outside the package has no JSON form.
	w, _ = NewIndependentWorkload(opaque{must(NewExponential(1))}, must(NewUniformInt(1, 1)))
	if _, err := json.Marshal(w); err == nil {
		t.Error("Marshal of an opaque law succeeded")
	}
}

func TestEmpiricalFile(t *testing.T) {
	w := loadTestWorkload(t, "empirical-file.json")
	data, _, _ := w.Marginals()
	want := must(NewEmpirical([]float64{25, 350, 0, 25, 1200, 77.25})).(Atomic)
	gv, gp := data.(Atomic).Atoms()
	wv, wp := want.Atoms()
	if !slices.Equal(gv, wv) || !slices.Equal(gp, wp) {
		t.Errorf("atoms %v %v, want %v %v", gv, gp, wv, wp)
	}
	// Absolute paths are used as they are.
	abs, _ := filepath.Abs(filepath.Join(testdataDir, "samples.txt"))
	spec, _ := json.Marshal(map[string]any{
		"data":    map[string]any{"kind": "empirical", "file": abs},
		"reduces": map[string]any{"kind": "uniform-int", "min": 1, "max": 1},
	})
	if _, err := DecodeWorkload(spec, "/nonexistent"); err != nil {
		t.Errorf("absolute file: %v", err)
	}
}

// validationCases are inputs that must be rejected, with the message after
// "models: invalid workload: ". Relative files are under testdata/workload.
var validationCases = []struct {
	name, input, want string
}{
	{"pareto alpha", `{"data":{"kind":"pareto","xm":1,"alpha":0.8},"reduces":{"kind":"uniform-int","min":1,"max":2}}`, `data.alpha = 0.8: must be > 1`},
	{"pareto xm", `{"data":{"kind":"pareto","xm":0,"alpha":2},"reduces":{"kind":"uniform-int","min":1,"max":2}}`, `data.xm = 0: must be > 0`},
	{"reduces min", `{"data":{"kind":"exponential","mean":5},"reduces":{"kind":"uniform-int","min":0,"max":2}}`, `reduces.min = 0: must be ≥ 1`},
	{"reduces max < min", `{"data":{"kind":"exponential","mean":5},"reduces":{"kind":"uniform-int","min":3,"max":2}}`, `reduces.max = 2: must be ≥ min (3)`},
	{"reduces too large", `{"data":{"kind":"exponential","mean":5},"reduces":{"kind":"uniform-int","min":1,"max":1e6}}`, `reduces.max = 1000000: must be ≤ 100000`},
	{"reduces not integer", `{"data":{"kind":"exponential","mean":5},"reduces":{"kind":"uniform-int","min":1,"max":2.5}}`, `reduces.max = 2.5: must be an integer`},
	{"reduces values not integer", `{"data":{"kind":"exponential","mean":5},"reduces":{"kind":"discrete","values":[1,0.5],"probs":[0.5,0.5]}}`, `reduces.values[1] = 0.5: must be an integer`},
	{"reduces duplicate", `{"data":{"kind":"exponential","mean":5},"reduces":{"kind":"discrete","values":[3,1,3],"probs":[0.5,0.25,0.25]}}`, `reduces.values[2] = 3: duplicate of reduces.values[0]`},
	{"reduces probs sum", `{"data":{"kind":"exponential","mean":5},"reduces":{"kind":"discrete","values":[1,2],"probs":[0.5,0.6]}}`, `reduces.probs: sum 1.1, must be 1 within 1e-9`},
	{"reduces unknown kind", `{"data":{"kind":"exponential","mean":5},"reduces":{"kind":"poisson","mean":2}}`, `reduces.kind = "poisson": unknown kind (want one of uniform-int, discrete)`},
	{"joint prob negative", `{"joint":[{"data":1,"reduces":1,"prob":0.5},{"data":2,"reduces":1,"prob":0.6},{"data":3,"reduces":2,"prob":-0.1}]}`, `joint[2].prob = -0.1: must be ≥ 0`},
	{"joint sum", `{"joint":[{"data":1,"reduces":1,"prob":0.5},{"data":2,"reduces":1,"prob":0.4}]}`, `joint: sum of prob 0.9, must be 1 within 1e-9`},
	{"joint duplicate", `{"joint":[{"data":10,"reduces":1,"prob":0.5},{"data":10,"reduces":1,"prob":0.5}]}`, `joint[1]: duplicate of joint[0] (data 10, reduces 1)`},
	{"joint negative data", `{"joint":[{"data":-5,"reduces":1,"prob":1}]}`, `joint[0].data = -5: must be ≥ 0`},
	{"joint reduces", `{"joint":[{"data":5,"reduces":0,"prob":1}]}`, `joint[0].reduces = 0: must be ≥ 1`},
	{"joint missing prob", `{"joint":[{"data":5,"reduces":1}]}`, `joint[0].prob: missing`},
	{"joint unknown field", `{"joint":[{"data":5,"reduces":1,"prob":1,"weight":2}]}`, `joint[0].weight: unknown field`},
	{"joint empty", `{"joint":[]}`, `joint: must not be empty`},
	{"joint not array", `{"joint":{}}`, `joint = {}: must be an array`},
	{"joint element not object", `{"joint":[5]}`, `joint[0] = 5: must be an object`},
	{"discrete probs sum", `{"data":{"kind":"discrete","values":[1,2],"probs":[0.5,0.47]},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.probs: sum 0.97, must be 1 within 1e-9`},
	{"discrete lengths", `{"data":{"kind":"discrete","values":[1,2,3],"probs":[0.5,0.5]},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.probs: has 2 entries, data.values has 3`},
	{"discrete duplicate", `{"data":{"kind":"discrete","values":[5,1,5],"probs":[0.2,0.3,0.5]},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.values[2] = 5: duplicate of data.values[0]`},
	{"discrete negative", `{"data":{"kind":"discrete","values":[1,-3],"probs":[0.5,0.5]},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.values[1] = -3: must be ≥ 0`},
	{"discrete empty", `{"data":{"kind":"discrete","values":[],"probs":[]},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.values: must not be empty`},
	{"unknown data field", `{"data":{"kind":"exponential","mena":5},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.mena: unknown field`},
	{"field of another kind", `{"data":{"kind":"exponential","mean":5,"sigma":1},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.sigma: unknown field`},
	{"unknown kind", `{"data":{"kind":"weibull","k":2},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.kind = "weibull": unknown kind (want one of uniform, exponential, lognormal, gamma, pareto, discrete, empirical)`},
	{"kind missing", `{"data":{"mean":2},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.kind: missing`},
	{"kind not string", `{"data":{"kind":3},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.kind = 3: must be a string`},
	{"both joint and marginals", `{"data":{"kind":"exponential","mean":5},"joint":[{"data":1,"reduces":1,"prob":1}]}`, `joint: must not be given together with data`},
	{"joint and reduces", `{"reduces":{"kind":"uniform-int","min":1,"max":1},"joint":[{"data":1,"reduces":1,"prob":1}]}`, `joint: must not be given together with reduces`},
	{"neither", `{}`, `give either joint or both data and reduces`},
	{"data missing", `{"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data: missing`},
	{"reduces missing", `{"data":{"kind":"exponential","mean":5}}`, `reduces: missing`},
	{"unknown top field", `{"data":{"kind":"exponential","mean":5},"reduces":{"kind":"uniform-int","min":1,"max":1},"jobs":3}`, `jobs: unknown field`},
	{"duplicate field", `{"data":{"kind":"exponential","mean":5},"data":{"kind":"exponential","mean":6},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data: duplicate field`},
	{"uniform negative", `{"data":{"kind":"uniform","min":-1,"max":5},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.min = -1: must be ≥ 0`},
	{"uniform empty", `{"data":{"kind":"uniform","min":5,"max":5},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.max = 5: must be > min (5)`},
	{"uniform missing max", `{"data":{"kind":"uniform","min":5},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.max: missing`},
	{"number as string", `{"data":{"kind":"uniform","min":"1","max":5},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.min = "1": must be a number`},
	{"null number", `{"data":{"kind":"exponential","mean":null},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.mean = null: must be a number`},
	{"overflowing number", `{"data":{"kind":"exponential","mean":1e999},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.mean = 1e999: must be a finite number`},
	{"exponential tiny", `{"data":{"kind":"exponential","mean":1e-250},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.mean = 1e-250: must be ≥ 1e-200`},
	{"exponential zero", `{"data":{"kind":"exponential","mean":0},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.mean = 0: must be > 0`},
	{"gamma shape", `{"data":{"kind":"gamma","shape":-1,"scale":2},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.shape = -1: must be > 0`},
	{"lognormal sigma", `{"data":{"kind":"lognormal","mu":0,"sigma":0},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.sigma = 0: must be > 0`},
	{"lognormal overflow", `{"data":{"kind":"lognormal","mu":0,"sigma":40},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.sigma = 40: mean exp(mu + sigma²/2) overflows float64`},
	{"data not object", `{"data":5,"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data = 5: must be an object`},
	{"empty samples", `{"data":{"kind":"empirical","samples":[]},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.samples: must not be empty`},
	{"negative sample", `{"data":{"kind":"empirical","samples":[1,-2]},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.samples[1] = -2: must be ≥ 0`},
	{"samples and file", `{"data":{"kind":"empirical","samples":[1],"file":"samples.txt"},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.file: must not be given together with samples`},
	{"neither samples nor file", `{"data":{"kind":"empirical"},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.samples: missing`},
	{"empty sample file", `{"data":{"kind":"empirical","file":"samples-empty.txt"},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.file = "samples-empty.txt": testdata/workload/samples-empty.txt: no samples`},
	{"bad sample line", `{"data":{"kind":"empirical","file":"samples-bad.txt"},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.file = "samples-bad.txt": testdata/workload/samples-bad.txt:3: "20 MB" is not a number`},
	{"negative sample line", `{"data":{"kind":"empirical","file":"samples-negative.txt"},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.file = "samples-negative.txt": testdata/workload/samples-negative.txt:2: -1: must be a finite number ≥ 0`},
	{"missing sample file", `{"data":{"kind":"empirical","file":"nope.txt"},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.file = "nope.txt": stat testdata/workload/nope.txt: no such file or directory`},
	{"sample file is a directory", `{"data":{"kind":"empirical","file":"."},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.file = ".": testdata/workload: not a regular file`},
	{"file empty", `{"data":{"kind":"empirical","file":""},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.file = "": must not be empty`},
	{"file not string", `{"data":{"kind":"empirical","file":7},"reduces":{"kind":"uniform-int","min":1,"max":1}}`, `data.file = 7: must be a string`},
	{"NaN literal", `{"data":{"kind":"exponential","mean":NaN}}`, `invalid JSON at line 1, column 38: invalid character 'N' looking for beginning of value`},
	{"trailing data", `{"joint":[{"data":1,"reduces":1,"prob":1}]} x`, `trailing data after the JSON object (line 1, column 45)`},
	{"empty input", ``, `empty input: want a JSON object`},
	{"not an object", `[1,2]`, `must be an object`},
}

func TestValidationErrors(t *testing.T) {
	for _, tt := range validationCases {
		t.Run(tt.name, func(t *testing.T) {
			w, err := DecodeWorkload([]byte(tt.input), testdataDir)
			if err == nil {
				t.Fatalf("accepted: %v", w)
			}
			if !errors.Is(err, ErrInvalidWorkload) {
				t.Errorf("%v does not wrap ErrInvalidWorkload", err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("%v is not a *ValidationError", err)
			}
			if got, want := err.Error(), "models: invalid workload: "+tt.want; got != want {
				t.Errorf("error\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestValidationErrorDetails(t *testing.T) {
	_, err := DecodeWorkload([]byte(`{"data":{"kind":"pareto","xm":1,"alpha":0.8},"reduces":{"kind":"uniform-int","min":1,"max":2}}`), "")
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "data.alpha" || ve.Value != 0.8 || ve.Reason != "must be > 1" {
		t.Errorf("ValidationError = %#v", ve)
	}
	_, err = DecodeWorkload([]byte(`{"data":{"kind":"empirical","file":"nope.txt"},"reduces":{"kind":"uniform-int","min":1,"max":1}}`), testdataDir)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing sample file: %v does not wrap fs.ErrNotExist", err)
	}
}

// TestConstructorErrors checks the Go constructors' messages (same fields as
// JSON), including NaN and Inf, which JSON cannot express.
func TestConstructorErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"uniform NaN", second(NewUniform(nan, 1)), `data.min = NaN: must be a finite number`},
		{"uniform Inf", second(NewUniform(0, inf)), `data.max = +Inf: must be a finite number`},
		{"exponential NaN", second(NewExponential(nan)), `data.mean = NaN: must be a finite number`},
		{"lognormal mu Inf", second(NewLognormal(-inf, 1)), `data.mu = -Inf: must be a finite number`},
		{"gamma mean overflow", second(NewGamma(1e200, 1e200)), `data.scale = 1e+200: mean shape·scale overflows float64`},
		{"pareto alpha", second(NewPareto(1, 1)), `data.alpha = 1: must be > 1`},
		{"pareto alpha NaN", second(NewPareto(1, nan)), `data.alpha = NaN: must be a finite number`},
		{"discrete prob NaN", second(NewDiscrete([]float64{1, 2}, []float64{nan, 1})), `data.probs[0] = NaN: must be a finite number`},
		{"discrete value Inf", second(NewDiscrete([]float64{inf}, []float64{1})), `data.values[0] = +Inf: must be a finite number`},
		{"empirical empty", second(NewEmpirical(nil)), `data.samples: must not be empty`},
		{"empirical NaN", second(NewEmpirical([]float64{1, nan})), `data.samples[1] = NaN: must be a finite number`},
		{"uniform-int", second(NewUniformInt(0, 3)), `reduces.min = 0: must be ≥ 1`},
		{"discrete reduces", second(NewDiscreteReduces([]int{1, 2}, []float64{1})), `reduces.probs: has 1 entries, reduces.values has 2`},
		{"discrete reduces large", second(NewDiscreteReduces([]int{200000}, []float64{1})), `reduces.values[0] = 200000: must be ≤ 100000`},
		{"joint empty", second(NewJointWorkload(nil)), `joint: must not be empty`},
		{"joint NaN prob", second(NewJointWorkload([]JointPoint{{1, 1, nan}})), `joint[0].prob = NaN: must be a finite number`},
		{"joint mean overflow", second(NewJointWorkload([]JointPoint{{math.MaxFloat64, 1, 0.5}, {math.MaxFloat64, 2, 0.5}})), ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == "" {
				if tt.err != nil {
					t.Errorf("unexpected error %v", tt.err)
				}
				return
			}
			if tt.err == nil || !errors.Is(tt.err, ErrInvalidWorkload) {
				t.Fatalf("error %v, want one wrapping ErrInvalidWorkload", tt.err)
			}
			if got, want := tt.err.Error(), "models: invalid workload: "+tt.want; got != want {
				t.Errorf("error\n got %s\nwant %s", got, want)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

func TestLoadAndEmbeddedDecoders(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.json")
	if err := os.WriteFile(path, []byte(`{"data":{"kind":"pareto","xm":1,"alpha":0.8},"reduces":{"kind":"uniform-int","min":1,"max":2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadWorkload(path)
	if want := path + ": models: invalid workload: data.alpha = 0.8: must be > 1"; err == nil || err.Error() != want {
		t.Errorf("LoadWorkload error %v, want %s", err, want)
	}
	if _, err := LoadWorkload(filepath.Join(dir, "none.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing workload file: %v", err)
	}

	_, err = DecodeWorkloadField([]byte(`{"data":{"kind":"exponential","mena":5},"reduces":{"kind":"uniform-int","min":1,"max":1}}`), "", "workload")
	if want := "models: invalid workload: workload.data.mena: unknown field"; err == nil || err.Error() != want {
		t.Errorf("DecodeWorkloadField error %v, want %s", err, want)
	}
	_, err = DecodeWorkloadField([]byte(`{}`), "", "workload")
	if want := "models: invalid workload: workload: give either joint or both data and reduces"; err == nil || err.Error() != want {
		t.Errorf("DecodeWorkloadField error %v, want %s", err, want)
	}

	d, err := DecodeDist([]byte(`{"kind": "uniform", "min": 1, "max": 100}`), "", "slots.cost")
	if err != nil || d.Kind() != KindUniform || d.Mean() != 50.5 {
		t.Errorf("DecodeDist = %v, %v", d, err)
	}
	_, err = DecodeDist([]byte(`{"kind": "uniform", "min": 1, "max": 0.5}`), "", "slots.cost")
	if want := "models: invalid workload: slots.cost.max = 0.5: must be > min (1)"; err == nil || err.Error() != want {
		t.Errorf("DecodeDist error %v, want %s", err, want)
	}
}

// TestEmpiricalTraceFile reads an empirical law from a real trace: one sample
// per job with a shuffle, in MB of 2^20 bytes, checked against the trace
// reader's own figures.
func TestEmpiricalTraceFile(t *testing.T) {
	for _, rel := range []string{
		"swim/FB-2010_samples_24_times_1hr_0.tsv",
		"coflow/FB2010-1Hr-150-0.txt",
		"hadoop-mumak/19-jobs.attempts.csv",
	} {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			path := testenv.TraceFile(t, rel)
			jobs, err := trace.ReadFile(path, trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var n int
			var sumMB float64
			for _, j := range jobs {
				if j.ShuffleBytes > 0 {
					n++
					sumMB += j.ShuffleBytes / (1 << 20)
				}
			}
			spec, _ := json.Marshal(map[string]any{
				"data":    map[string]any{"kind": "empirical", "file": path},
				"reduces": map[string]any{"kind": "uniform-int", "min": 1, "max": 1},
			})
			w, err := DecodeWorkload(spec, "")
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatal("trace has no job with shuffle data")
			}
			if got, want := w.MeanData(), sumMB/float64(n); !scalar.EqualWithinAbsOrRel(got, want, 0, 1e-12) {
				t.Errorf("E[X] = %v MB, want %v MB over %d jobs", got, want, n)
			}
		})
	}
}
