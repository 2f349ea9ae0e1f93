package placement

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/thresholds"
)

func freeSlots(n int) []policy.Slot {
	s := make([]policy.Slot, n)
	for i := range s {
		s[i] = policy.Slot{Index: i, Cost: float64(i + 1)}
	}
	return s
}

func validPositions(t *testing.T, name string, pos []int, r, n int) {
	t.Helper()
	if len(pos) != r {
		t.Fatalf("%s: %d positions, want %d", name, len(pos), r)
	}
	for k, p := range pos {
		if p < 0 || p >= n || (k > 0 && p <= pos[k-1]) {
			t.Fatalf("%s: positions %v not ascending in [0, %d)", name, pos, n)
		}
	}
}

func TestRegistry(t *testing.T) {
	want := []string{NameGreedy, NameRandom, NameRecedingHorizon, NameRollingHorizon}
	for _, n := range want {
		if !slices.Contains(policy.PlacementNames(), n) {
			t.Errorf("%q not registered (have %v)", n, policy.PlacementNames())
		}
		p, err := policy.NewPlacement(n, policy.PlacementConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Name() != n {
			t.Errorf("policy %q names itself %q", n, p.Name())
		}
	}
	if err := policy.RegisterPlacement(NameGreedy, NewRandom); !errors.Is(err, policy.ErrDuplicatePolicy) {
		t.Errorf("duplicate registration: %v", err)
	}
	if err := policy.RegisterPlacement("", NewRandom); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := policy.NewPlacement("nope", policy.PlacementConfig{}); !errors.Is(err, policy.ErrUnknownPolicy) {
		t.Errorf("unknown policy: %v", err)
	}
	if _, err := policy.NewPlacement(NameRecedingHorizon, policy.PlacementConfig{Window: -1}); !errors.Is(err, policy.ErrInvalidConfig) {
		t.Errorf("negative window: %v", err)
	}
	if _, err := policy.NewPlacement(NameRollingHorizon, policy.PlacementConfig{Horizon: -1}); !errors.Is(err, policy.ErrInvalidConfig) {
		t.Errorf("negative horizon: %v", err)
	}
}

func TestInvalidRequests(t *testing.T) {
	for _, n := range policy.PlacementNames() {
		p, _ := policy.NewPlacement(n, policy.PlacementConfig{})
		for _, req := range []policy.PlacementRequest{
			{Free: freeSlots(2), X: 1, R: 3},
			{Free: freeSlots(2), X: 1, R: 0},
			{Free: freeSlots(2), X: math.NaN(), R: 1},
			{Free: freeSlots(2), X: -1, R: 1},
		} {
			if _, err := p.Place(&req); !errors.Is(err, policy.ErrInvalidRequest) {
				t.Errorf("%s: request %+v: error %v", n, req, err)
			}
		}
	}
}

func TestGreedy(t *testing.T) {
	d, err := Greedy{}.Place(&policy.PlacementRequest{Free: freeSlots(10), X: 5, R: 3})
	if err != nil || !slices.Equal(d.Positions, []int{0, 1, 2}) || d.Reason == "" {
		t.Errorf("greedy: %+v, %v", d, err)
	}
}

// TestRandomUniform: every R-subset is drawn with probability 1/C(n, R):
// each of the C(5, 2) = 10 subsets is drawn within 5% of its expected 20000
// times (7.5 standard deviations: never fails by chance with a fixed seed,
// and catches any bias above a few percent).
func TestRandomUniform(t *testing.T) {
	p, _ := NewRandom(policy.PlacementConfig{Seed: 42})
	const draws = 200000
	counts := map[[2]int]int{}
	for range draws {
		d, err := p.Place(&policy.PlacementRequest{Free: freeSlots(5), X: 1, R: 2})
		if err != nil {
			t.Fatal(err)
		}
		validPositions(t, "random", d.Positions, 2, 5)
		counts[[2]int{d.Positions[0], d.Positions[1]}]++
	}
	if len(counts) != 10 {
		t.Fatalf("%d distinct subsets, want 10", len(counts))
	}
	for s, c := range counts {
		if math.Abs(float64(c)-draws/10) > 0.05*draws/10 {
			t.Errorf("subset %v drawn %d times, want about %d", s, c, draws/10)
		}
	}
	// Reproducible from the seed; a large R uses the set path.
	a, _ := NewRandom(policy.PlacementConfig{Seed: 7})
	b, _ := NewRandom(policy.PlacementConfig{Seed: 7})
	for range 100 {
		da, _ := a.Place(&policy.PlacementRequest{Free: freeSlots(100), X: 1, R: 40})
		db, _ := b.Place(&policy.PlacementRequest{Free: freeSlots(100), X: 1, R: 40})
		validPositions(t, "random", da.Positions, 40, 100)
		if !slices.Equal(da.Positions, db.Positions) {
			t.Fatal("same seed, different draws")
		}
	}
}

// TestRecedingHorizonMatchesThresholds: the policy makes exactly the
// decisions of thresholds.RecedingHorizon fed the same observations.
func TestRecedingHorizonMatchesThresholds(t *testing.T) {
	p, _ := policy.NewPlacement(NameRecedingHorizon, policy.PlacementConfig{Window: 5})
	ref, _ := thresholds.NewRecedingHorizon(5)
	jobs := []struct {
		x    float64
		r, n int
	}{{10, 2, 0}, {1, 2, 3}, {50, 1, 1}, {2, 3, 2}, {0.5, 1, 4}, {30, 2, 0}, {3, 2, 5}}
	skips := 0
	for _, j := range jobs {
		req := &policy.PlacementRequest{Free: freeSlots(8), X: j.x, R: j.r, JobsInSystem: j.n}
		d, err := p.Place(req)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ref.Decide(thresholds.Observation{JobsInSystem: j.n, Data: j.x, Reduces: j.r}, 8)
		if !slices.Equal(d.Positions, want.Positions) || d.Threshold != want.Estimate.Threshold {
			t.Errorf("job %+v: %v (threshold %v), want %v (%v)", j, d.Positions, d.Threshold, want.Positions, want.Estimate.Threshold)
		}
		if want.Rule == thresholds.RuleSkip {
			skips++
		}
	}
	if skips == 0 {
		t.Error("the sequence never exercised the skip branch")
	}
}

// TestRollingHorizonValid: decisions are valid blocks and agree with
// thresholds.Rolling fed the same observations.
func TestRollingHorizonValid(t *testing.T) {
	p, _ := policy.NewPlacement(NameRollingHorizon, policy.PlacementConfig{Window: 10, Horizon: 2})
	est, _ := thresholds.NewEstimator(10)
	ref, _ := thresholds.NewRolling(thresholds.RollingConfig{Horizon: 2}, est)
	for i := range 40 {
		x, r := float64(1+(i*37)%50), 1+i%3
		req := &policy.PlacementRequest{Free: freeSlots(12), X: x, R: r, JobsInSystem: i % 4}
		d, err := p.Place(req)
		if err != nil {
			t.Fatal(err)
		}
		validPositions(t, "rolling", d.Positions, r, 12)
		want, _ := ref.Decide(t.Context(), thresholds.Observation{JobsInSystem: i % 4, Data: x, Reduces: r}, 12)
		if !slices.Equal(d.Positions, want.Positions) {
			t.Errorf("job %d: %v, want %v", i, d.Positions, want.Positions)
		}
	}
}

// TestRandomSnapshot: a random policy restored from the snapshot of one
// that placed k jobs (into a policy of another seed) draws the same
// positions as the original for every later job, over seeds, k and sizes;
// a damaged snapshot is refused.
func TestRandomSnapshot(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		for _, k := range []int{0, 1, 5} {
			a, _ := NewRandom(policy.PlacementConfig{Seed: seed})
			req := func(i int) *policy.PlacementRequest {
				return &policy.PlacementRequest{Free: freeSlots(10 + i%7), R: 1 + i%5, X: 1}
			}
			for i := range k {
				if _, err := a.Place(req(i)); err != nil {
					t.Fatal(err)
				}
			}
			snap, err := a.(policy.Stateful).Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := NewRandom(policy.PlacementConfig{Seed: seed + 1000})
			if err := b.(policy.Stateful).Restore(snap); err != nil {
				t.Fatal(err)
			}
			for i := k; i < k+10; i++ {
				da, _ := a.Place(req(i))
				db, _ := b.Place(req(i))
				if !slices.Equal(da.Positions, db.Positions) {
					t.Fatalf("seed %d after %d jobs, job %d: restored draws %v, original %v", seed, k, i, db.Positions, da.Positions)
				}
			}
		}
	}
	p, _ := NewRandom(policy.PlacementConfig{})
	for _, bad := range []string{`{"pcg":"AAAA"}`, `{"rng":1}`, `[]`} {
		if err := p.(policy.Stateful).Restore([]byte(bad)); err == nil || !errors.Is(err, policy.ErrInvalidConfig) {
			t.Errorf("restore %s: %v, want an invalid-config error", bad, err)
		}
	}
}
