package inputkind

import (
	"testing"

	"github.com/optd/optd/examples"
)

// Every example is recognized as its own format and accepted as it; each
// is refused as every other input format, with its name and verb.
func TestExamplesAreTheirOwnKind(t *testing.T) {
	names := examples.Names()
	for _, name := range names {
		data, err := examples.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if k := Detect(data); k == nil || k.Name != name {
			t.Errorf("example %s detected as %v", name, k)
		}
		for _, other := range names {
			err := Check(data, other)
			if (err == nil) != (other == name) {
				t.Errorf("example %s checked as %s: %v", name, other, err)
			}
		}
	}
}

func TestUnrecognizedIsLeftToTheDecoder(t *testing.T) {
	for _, doc := range []string{``, `[1]`, `{}`, `{"colour": 1}`, `{"cluster": {}, "slots": {}}`, `{"nodes": []}`} {
		if k := Detect([]byte(doc)); k != nil {
			t.Errorf("%s detected as %s", doc, k.Name)
		}
		if err := Check([]byte(doc), "workload"); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
	if got, want := Check([]byte(`{"lower_bounds": {}}`), "placement-scenario").Error(),
		"this is a bound output (what optd bound prints), not a placement scenario"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// FuzzCheck: never a panic; a document Check refuses is one Detect names.
func FuzzCheck(f *testing.F) {
	for _, name := range examples.Names() {
		data, _ := examples.Get(name)
		f.Add(data)
	}
	f.Add([]byte(`{"lower_bounds": {}, "cluster": {}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, k := range Kinds {
			if err := Check(data, k.Name); err != nil && Detect(data) == nil {
				t.Fatalf("%q refused as %s without a kind: %v", data, k.Name, err)
			}
		}
	})
}
