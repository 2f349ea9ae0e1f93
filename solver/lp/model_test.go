package lp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// cloneProblem deep-copies p.
func cloneProblem(p *Problem) *Problem {
	c := func(v []float64) []float64 { return append([]float64(nil), v...) }
	return &Problem{
		Sense: p.Sense, Obj: c(p.Obj), ColLower: c(p.ColLower), ColUpper: c(p.ColUpper),
		RowLower: c(p.RowLower), RowUpper: c(p.RowUpper),
		ColStart: append([]int(nil), p.ColStart...), RowIndex: append([]int(nil), p.RowIndex...), Value: c(p.Value),
	}
}

// TestModelWarmResolveEqualsFresh changes bounds and objective coefficients of a
// solved Model and checks that the warm re-solve agrees with a fresh solve of the
// changed problem.
func TestModelWarmResolveEqualsFresh(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 23))
	agreedOptimal := 0
	for k := range 150 {
		p := randomLP(r, 2+r.IntN(15), 2+r.IntN(15), true)
		model, err := NewModel(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := model.Solve(context.Background(), Options{}); err != nil && !errors.Is(err, ErrUnbounded) {
			t.Fatalf("LP %d first solve: %v", k, err)
		}
		changed := cloneProblem(p)
		for range 1 + r.IntN(3) {
			switch r.IntN(3) {
			case 0:
				j := r.IntN(p.NumCols())
				lo := float64(r.IntN(7) - 4)
				hi := lo + float64(r.IntN(4))
				if r.IntN(3) == 0 {
					hi = inf
				}
				model.SetColBounds(j, lo, hi)
				changed.ColLower[j], changed.ColUpper[j] = lo, hi
			case 1:
				i := r.IntN(p.NumRows())
				lo, hi := changed.RowLower[i]-1, changed.RowUpper[i]+float64(r.IntN(3)-1)
				if hi < lo {
					hi = lo
				}
				model.SetRowBounds(i, lo, hi)
				changed.RowLower[i], changed.RowUpper[i] = lo, hi
			default:
				j := r.IntN(p.NumCols())
				c := float64(r.IntN(11) - 5)
				model.SetObj(j, c)
				changed.Obj[j] = c
			}
		}
		alg := Algorithm(r.IntN(3))
		warm, errWarm := model.Solve(context.Background(), Options{Algorithm: alg})
		model.Close()
		fresh, errFresh := Solve(context.Background(), changed, Options{})
		if !errors.Is(errWarm, errFresh) && !(errWarm == nil && errFresh == nil) {
			t.Fatalf("LP %d (%v): warm %v, fresh %v", k, alg, errWarm, errFresh)
		}
		if errWarm != nil {
			continue
		}
		if !near(warm.Objective, fresh.Objective) {
			t.Fatalf("LP %d (%v): warm objective %v, fresh %v", k, alg, warm.Objective, fresh.Objective)
		}
		checkKKT(t, changed, warm)
		agreedOptimal++
	}
	if agreedOptimal < 50 {
		t.Errorf("only %d optimal re-solves", agreedOptimal)
	}
}

// TestModelWarmStartSavesIterations checks on a fixed larger LP that re-solving after
// tightening the binding rows starts from the previous basis: far fewer iterations
// than a fresh solve of the changed problem, and the same objective.
func TestModelWarmStartSavesIterations(t *testing.T) {
	p := randomSparseLP(rand.New(rand.NewPCG(1, 1)), 100, 500, 0.02)
	model, err := NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	first, err := model.Solve(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Halve the upper bounds of the binding rows (nonzero duals).
	changed := cloneProblem(p)
	tightened := 0
	for i, y := range first.RowDuals {
		if y != 0 {
			changed.RowUpper[i] *= 0.5
			model.SetRowBounds(i, changed.RowLower[i], changed.RowUpper[i])
			tightened++
		}
	}
	if tightened == 0 {
		t.Fatal("no binding row")
	}
	warm, err := model.Solve(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := Solve(context.Background(), changed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("iterations: first %d, warm re-solve %d, fresh %d (%d rows tightened, objective %v -> %v)",
		first.Iterations, warm.Iterations, fresh.Iterations, tightened, first.Objective, warm.Objective)
	if !near(warm.Objective, fresh.Objective) {
		t.Errorf("warm objective %v, fresh %v", warm.Objective, fresh.Objective)
	}
	if 2*warm.Iterations >= fresh.Iterations {
		t.Errorf("warm re-solve took %d iterations, fresh %d: no warm start", warm.Iterations, fresh.Iterations)
	}
	checkKKT(t, changed, warm)
}

func TestModelInvalidChangeReportedBySolve(t *testing.T) {
	p := &Problem{}
	r := p.AddRow(1, inf)
	p.AddCol(1, 0, 10, []int{r}, []float64{1})
	model, err := NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	for _, tc := range []struct {
		name  string
		edit  func()
		field string
	}{
		{"column lo > hi", func() { model.SetColBounds(0, 3, 2) }, "ColUpper"},
		{"row NaN", func() { model.SetRowBounds(0, math.NaN(), 2) }, "RowLower"},
		{"objective Inf", func() { model.SetObj(0, inf) }, "Obj"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.edit()
			_, err := model.Solve(context.Background(), Options{})
			var ie *InputError
			if !errors.As(err, &ie) || ie.Field != tc.field || ie.Index != 0 {
				t.Fatalf("Solve = %v, want an *InputError naming %s[0]", err, tc.field)
			}
			model.SetColBounds(0, 0, 10)
			model.SetRowBounds(0, 1, inf)
			model.SetObj(0, 1)
			sol, err := model.Solve(context.Background(), Options{})
			if err != nil || !near(sol.Objective, 1) {
				t.Fatalf("after repair: %v, %v; want objective 1", sol, err)
			}
		})
	}
}

func TestModelSetterPanicsOutOfRange(t *testing.T) {
	model, err := NewModel(&Problem{})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	for name, f := range map[string]func(){
		"SetColBounds": func() { model.SetColBounds(0, 0, 1) },
		"SetRowBounds": func() { model.SetRowBounds(-1, 0, 1) },
		"SetObj":       func() { model.SetObj(3, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s out of range did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestModelClose(t *testing.T) {
	before := liveModels.Load()
	p := &Problem{}
	p.AddCol(1, 0, 1, nil, nil)
	model, err := NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := liveModels.Load(); got != before+1 {
		t.Fatalf("live models %d after NewModel, want %d", got, before+1)
	}
	model.Close()
	model.Close() // idempotent
	if got := liveModels.Load(); got != before {
		t.Fatalf("live models %d after Close, want %d", got, before)
	}
	if sol, err := model.Solve(context.Background(), Options{}); sol != nil || !errors.Is(err, ErrClosed) {
		t.Fatalf("Solve after Close = %v, %v; want ErrClosed", sol, err)
	}
}

// TestModelCleanupBackstop drops Models without closing them and checks that the
// runtime cleanup frees their Clp models.
func TestModelCleanupBackstop(t *testing.T) {
	before := liveModels.Load()
	func() {
		for range 20 {
			if _, err := NewModel(randomLP(rand.New(rand.NewPCG(1, 2)), 3, 3, true)); err != nil {
				t.Fatal(err)
			}
		}
	}()
	for range 100 {
		if liveModels.Load() == before {
			return
		}
		runtime.GC()
		runtime.Gosched()
	}
	t.Fatalf("live models %d after GC, want %d", liveModels.Load(), before)
}

// TestNoLeak creates, solves and closes many models and checks that the process's
// resident memory does not grow with their number (leaking these small models would
// cost about 14 KB each, 140 MB for 10⁴, as measured by disabling Clp_deleteModel).
func TestNoLeak(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 2000
	}
	p := randomLP(rand.New(rand.NewPCG(5, 6)), 6, 6, true)
	cycle := func(count int) {
		for range count {
			model, err := NewModel(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := model.Solve(context.Background(), Options{}); err != nil && !errors.Is(err, ErrUnbounded) {
				t.Fatal(err)
			}
			model.Close()
		}
	}
	before := liveModels.Load()
	cycle(500) // warm up allocator arenas
	rss0, ok := residentBytes()
	if !ok {
		t.Skip("no /proc/self/statm: cannot measure resident memory")
	}
	cycle(n)
	runtime.GC()
	rss1, _ := residentBytes()
	t.Logf("resident memory %d MB -> %d MB over %d models", rss0>>20, rss1>>20, n)
	if got := liveModels.Load(); got != before {
		t.Errorf("live models %d, want %d", got, before)
	}
	// A leaked model costs about 14 KB; allow 4 KB per model (at least 16 MB) of
	// allocator noise.
	if growth, limit := rss1-rss0, max(int64(n)<<12, 16<<20); growth > limit {
		t.Errorf("resident memory grew by %d MB over %d models", growth>>20, n)
	}
}

// residentBytes reads the resident set size from /proc/self/statm.
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

// TestConcurrentModels solves separate models from several goroutines and compares
// with sequential results.
func TestConcurrentModels(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 37))
	problems := make([]*Problem, 40)
	want := make([]float64, len(problems))
	wantErr := make([]error, len(problems))
	for k := range problems {
		problems[k] = randomLP(r, 5+r.IntN(20), 5+r.IntN(20), k%2 == 0)
		sol, err := Solve(context.Background(), problems[k], Options{})
		wantErr[k] = err
		if err == nil {
			want[k] = sol.Objective
		}
	}
	const workers = 6
	var wg sync.WaitGroup
	errs := make(chan error, workers*len(problems))
	for w := range workers {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background()) // exercises the watcher
			defer cancel()
			for k := range problems {
				k := (k + w*7) % len(problems)
				sol, err := Solve(ctx, problems[k], Options{Algorithm: Algorithm(w % 3)})
				switch {
				case !errors.Is(err, wantErr[k]) && !(err == nil && wantErr[k] == nil):
					errs <- errors.New("LP " + strconv.Itoa(k) + ": " + errString(err) + ", sequential " + errString(wantErr[k]))
				case err == nil && !near(sol.Objective, want[k]):
					errs <- errors.New("LP " + strconv.Itoa(k) + ": objective differs from the sequential solve")
				case err == nil:
					if e := kktError(problems[k], sol); e != nil {
						errs <- e
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "optimal"
	}
	return err.Error()
}

// TestSharedModelSerializes uses one Model from several goroutines; the mutex must
// serialize them (run with -race).
func TestSharedModelSerializes(t *testing.T) {
	p := randomSparseLP(rand.New(rand.NewPCG(2, 3)), 20, 40, 0.2)
	model, err := NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	solved := 0
	for w := range 4 {
		wg.Go(func() {
			for k := range 10 {
				model.SetObj((w*10+k)%p.NumCols(), float64(1+k))
				sol, err := model.Solve(context.Background(), Options{})
				if err != nil {
					t.Error(err)
					return
				}
				if len(sol.Primal) != p.NumCols() {
					t.Errorf("solution has %d columns", len(sol.Primal))
				}
				mu.Lock()
				solved++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if solved != 40 {
		t.Errorf("%d of 40 solves succeeded", solved)
	}
	// The final objective is whatever the last SetObj calls left; a fresh solve of
	// the model's current data must agree with a last warm solve.
	final := cloneProblem(p)
	copy(final.Obj, model.obj)
	warm, err := model.Solve(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := Solve(context.Background(), final, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !near(warm.Objective, fresh.Objective) {
		t.Errorf("warm %v, fresh %v", warm.Objective, fresh.Objective)
	}
}
