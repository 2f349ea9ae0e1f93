package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

type inner struct {
	Maps  int     `json:"maps"`
	Rate  float64 `json:"rate"`
	Name  string  `json:"name,omitempty"`
	Flags []bool  `json:"flags"`
}

type doc struct {
	Jobs  []inner          `json:"jobs"`
	Seed  uint64           `json:"seed"`
	Small int8             `json:"small"`
	Opt   *int             `json:"opt"`
	By    map[string][]int `json:"by"`
	Raw   json.RawMessage  `json:"raw"`
	Any   any              `json:"any"`
	Pair  [2]int           `json:"pair"`
}

func TestMessages(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{``, "empty input: want a JSON object"},
		{`[1]`, "the document is an array; want an object"},
		{`{"colour": 1}`, "colour: unknown field (allowed here: jobs, seed, small, opt, by, raw, any, pair)"},
		{`{"jobs": [{"maps": 1}, {"maps": 2}, {"maps": 3}, {"maps": "x"}]}`, `jobs[3].maps = "x": must be an integer`},
		{`{"jobs": [{"maps": 1.5}]}`, "jobs[0].maps = 1.5: must be an integer"},
		{`{"jobs": [{"mapz": 1}]}`, "jobs[0].mapz: unknown field (allowed here: maps, rate, name, flags)"},
		{`{"jobs": {"maps": 1}}`, "jobs = {…}: must be an array of objects"},
		{`{"jobs": [{"flags": [true, 1]}]}`, "jobs[0].flags[1] = 1: must be true or false"},
		{`{"seed": -1}`, "seed = -1: must be a non-negative integer"},
		{`{"seed": 1e3}`, "seed = 1e3: must be a non-negative integer"},
		{`{"small": 300}`, "small = 300: out of range (at most 127 in absolute value)"},
		{`{"opt": "3"}`, `opt = "3": must be an integer`},
		{`{"by": {"a": [1, "b"]}}`, `by.a[1] = "b": must be an integer`},
		{`{"pair": [1, 2, 3]}`, "pair: at most 2 elements"},
		{`{"seed": 1, "seed": 2}`, "seed: duplicate field"},
		{`{"jobs": [{"rate": 1e999}]}`, "jobs[0].rate = 1e999: out of range for a number"},
		{`{"jobs": [{"maps": 1,}]}`, "jobs[0]: invalid JSON at line 1, column 22: invalid character '}' looking for beginning of object key string"},
		{"{\n\"jobs\": [\n{\"maps\": 1}\n", "jobs: the JSON ends too early (truncated?)"},
		{`{} {}`, "trailing data after the JSON object (line 1, column 5)"},
		{`{"raw": [1, {]}`, "raw: invalid JSON at line 1, column 14: invalid character ']' looking for beginning of object key string"},
	} {
		var d doc
		err := Decode([]byte(c.in), &d)
		var se *Error
		if !errors.As(err, &se) || err.Error() != c.want {
			t.Errorf("%q:\n got  %v\n want %s", c.in, err, c.want)
		}
	}
}

func TestAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	in := `{"jobs": [{"maps": 2, "rate": 0.5, "flags": [true]}], "seed": 7, "opt": null, "by": {"x": [1]},
	        "raw": {"a": [1, 2]}, "any": [{"b": null}], "pair": [1, 2], "small": -3, "MAPS": 1}`
	in = in[:len(in)-len(`, "MAPS": 1}`)] + "}"
	var got, want doc
	if err := Decode([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// FuzzDecode: never a panic; whatever encoding/json's strict decoder
// accepts (without duplicate fields) Decode accepts with the same value,
// and whatever it refuses Decode refuses with an *Error.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"jobs": [{"maps": 1, "rate": 2.5, "flags": [true]}]}`, `{"seed": -1}`,
		`{"by": {"a": [1]}, "raw": [1, {"x": null}], "any": 3, "pair": [1, 2]}`, `{"jobs": [{"maps": "x"}]}`, `[`, `{"small": 128}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got doc
		err := Decode(data, &got)
		var want doc
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		stdErr := dec.Decode(&want)
		if stdErr == nil && dec.More() {
			stdErr = errors.New("trailing")
		}
		if stdErr == nil {
			if _, terr := dec.Token(); terr == nil {
				stdErr = errors.New("trailing")
			}
		}
		switch {
		case err == nil && stdErr != nil:
			t.Fatalf("%q: Decode accepts what encoding/json refuses (%v)", data, stdErr)
		case err != nil:
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is not an *Error", data, err)
			}
		case !reflect.DeepEqual(got, want):
			t.Fatalf("%q: got %+v, encoding/json %+v", data, got, want)
		}
	})
}
