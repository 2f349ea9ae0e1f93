package lp

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// slowLP is large enough that Clp needs a few hundred milliseconds and thousands of
// iterations, so a cancellation a few milliseconds in lands mid-solve.
func slowLP(t *testing.T) *Problem {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a solve of a few hundred milliseconds")
	}
	p := randomSparseLP(rand.New(rand.NewPCG(42, 1)), 600, 3000, 0.008)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCancelledContextBeforeSolve(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &Problem{}
	p.AddCol(1, 0, 1, nil, nil)
	sol, err := Solve(ctx, p, Options{})
	if sol != nil || !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeLimit) {
		t.Fatalf("Solve = %v, %v; want an error wrapping context.Canceled only", sol, err)
	}
}

// TestCancelDuringSolve cancels a running solve, then continues the same Model with
// a live context: the interrupted basis must lead to the same optimum as a fresh,
// uninterrupted solve.
func TestCancelDuringSolve(t *testing.T) {
	p := slowLP(t)
	fresh, err := Solve(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	model, err := NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled time.Time
	timer := time.AfterFunc(5*time.Millisecond, func() {
		cancelled = time.Now()
		cancel()
	})
	defer timer.Stop()
	sol, err := model.Solve(ctx, Options{})
	returned := time.Now()
	if sol != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Solve = %v, %v; want an error wrapping context.Canceled (fresh solve took %d iterations)", sol, err, fresh.Iterations)
	}
	t.Logf("returned %v after cancellation; uninterrupted solve: %d iterations", returned.Sub(cancelled), fresh.Iterations)

	resumed, err := model.Solve(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !near(resumed.Objective, fresh.Objective) {
		t.Errorf("resumed objective %v, fresh %v", resumed.Objective, fresh.Objective)
	}
	checkKKT(t, p, resumed)
}

func TestTimeLimit(t *testing.T) {
	p := slowLP(t)
	sol, err := Solve(context.Background(), p, Options{TimeLimit: 5 * time.Millisecond})
	if sol != nil || !errors.Is(err, ErrTimeLimit) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Solve = %v, %v; want ErrTimeLimit", sol, err)
	}
}

func TestContextDeadlineIsTimeLimit(t *testing.T) {
	p := slowLP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	sol, err := Solve(ctx, p, Options{Algorithm: Primal})
	if sol != nil || !errors.Is(err, ErrTimeLimit) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Solve = %v, %v; want an error wrapping ErrTimeLimit and context.DeadlineExceeded", sol, err)
	}
}

// TestGenerousLimitsDoNotChangeResults solves with a cancellable context and a time
// limit that are never hit: the watcher must not disturb the solve.
func TestGenerousLimitsDoNotChangeResults(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for k := range 50 {
		p := randomLP(r, 3+r.IntN(10), 3+r.IntN(10), true)
		plain, errPlain := Solve(context.Background(), p, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		watched, errWatched := Solve(ctx, p, Options{TimeLimit: time.Hour})
		cancel()
		if !errors.Is(errWatched, errPlain) && !(errWatched == nil && errPlain == nil) {
			t.Fatalf("LP %d: %v with limits, %v without", k, errWatched, errPlain)
		}
		if errPlain == nil && (watched.Objective != plain.Objective || watched.Iterations != plain.Iterations) {
			t.Fatalf("LP %d: objective %v in %d iterations with limits, %v in %d without",
				k, watched.Objective, watched.Iterations, plain.Objective, plain.Iterations)
		}
	}
}
