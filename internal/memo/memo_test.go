package memo

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestComputesOnceForConcurrentCallers: callers of one key share one
// computation and its value.
func TestComputesOnceForConcurrentCallers(t *testing.T) {
	m := New[int](4)
	var calls atomic.Int32
	release := make(chan struct{})
	compute := func(context.Context) (int, error) {
		calls.Add(1)
		<-release
		return 42, nil
	}
	const callers = 16
	var wg sync.WaitGroup
	got := make([]int, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = m.Get(context.Background(), "k", compute)
		}()
	}
	close(release)
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || got[i] != 42 {
			t.Fatalf("caller %d: %d, %v; want 42", i, got[i], errs[i])
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d computations for one key, want 1", n)
	}
	if v, err := m.Get(context.Background(), "k", func(context.Context) (int, error) { return 0, errors.New("recomputed") }); v != 42 || err != nil {
		t.Fatalf("kept value: %d, %v", v, err)
	}
}

// TestFailureIsForgotten: a failed computation is reported to its callers
// and the next call computes again.
func TestFailureIsForgotten(t *testing.T) {
	m := New[int](4)
	boom := errors.New("boom")
	if _, err := m.Get(context.Background(), "k", func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	v, err := m.Get(context.Background(), "k", func(context.Context) (int, error) { return 7, nil })
	if err != nil || v != 7 {
		t.Fatalf("after a failure: %d, %v; want 7", v, err)
	}
}

// TestLastCallerLeavingCancels: when every waiting caller's context ends,
// the computation's context is cancelled, the callers get their own
// context's error, and a later call computes afresh.
func TestLastCallerLeavingCancels(t *testing.T) {
	m := New[int](4)
	started := make(chan struct{})
	stopped := make(chan error, 1)
	compute := func(ctx context.Context) (int, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return 0, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Get(ctx, "k", compute)
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("caller got %v, want its own context.Canceled", err)
	}
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("computation's context ended with %v, want cancelled", err)
	}
	v, err := m.Get(context.Background(), "k", func(context.Context) (int, error) { return 3, nil })
	if err != nil || v != 3 {
		t.Fatalf("after a cancelled computation: %d, %v; want a fresh 3", v, err)
	}
}

// TestOneCallerLeavingKeepsOthers: a caller whose deadline passes leaves
// with DeadlineExceeded; the computation goes on for the caller still
// waiting, which gets the value.
func TestOneCallerLeavingKeepsOthers(t *testing.T) {
	m := New[string](4)
	started, release := make(chan struct{}), make(chan struct{})
	var cancelled atomic.Bool
	compute := func(ctx context.Context) (string, error) {
		close(started)
		select {
		case <-release:
			return "v", nil
		case <-ctx.Done():
			cancelled.Store(true)
			return "", ctx.Err()
		}
	}
	stay := make(chan error, 1)
	var stayed string
	go func() {
		var err error
		stayed, err = m.Get(context.Background(), "k", compute)
		stay <- err
	}()
	<-started
	short, cancel := context.WithCancel(context.Background())
	cancel() // already past its deadline when it joins
	if _, err := m.Get(short, "k", compute); !errors.Is(err, context.Canceled) {
		t.Fatalf("leaving caller got %v", err)
	}
	close(release)
	if err := <-stay; err != nil || stayed != "v" {
		t.Fatalf("remaining caller got %q, %v", stayed, err)
	}
	if cancelled.Load() {
		t.Fatal("the computation was cancelled while a caller still waited")
	}
}

// TestValuesBounded: at most size values are kept, the oldest dropped.
func TestValuesBounded(t *testing.T) {
	m := New[int](3)
	calls := map[string]int{}
	get := func(k string) {
		t.Helper()
		if _, err := m.Get(context.Background(), k, func(context.Context) (int, error) { calls[k]++; return len(k), nil }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		get(fmt.Sprint("k", i))
	}
	if n := m.Len(); n != 3 {
		t.Fatalf("%d values kept, want 3", n)
	}
	get("k4") // kept
	get("k0") // dropped: computed again
	if calls["k4"] != 1 || calls["k0"] != 2 {
		t.Fatalf("computations %v: want k4 once (kept), k0 twice (dropped)", calls)
	}
}

// TestComputeSeesCallerValues: the computation's context carries the
// first caller's values (a logger, a trace) but not its deadline.
func TestComputeSeesCallerValues(t *testing.T) {
	type ctxKey struct{}
	m := New[bool](1)
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "x"), 1<<40)
	defer cancel()
	ok, err := m.Get(ctx, "k", func(c context.Context) (bool, error) {
		_, hasDeadline := c.Deadline()
		return c.Value(ctxKey{}) == "x" && !hasDeadline, nil
	})
	if err != nil || !ok {
		t.Fatalf("compute's context: values carried and no deadline = %v (%v)", ok, err)
	}
}

// TestRunningNotDropped: a value still being computed is not dropped to
// make room, so a second call for its key shares it instead of starting
// the same work again.
func TestRunningNotDropped(t *testing.T) {
	m := New[int](1)
	release := make(chan struct{})
	var calls atomic.Int32
	slow := func(context.Context) (int, error) { calls.Add(1); <-release; return 1, nil }
	first := make(chan int, 1)
	go func() { v, _ := m.Get(context.Background(), "slow", slow); first <- v }()
	for m.Len() == 0 {
		runtime.Gosched()
	}
	if _, err := m.Get(context.Background(), "other", func(context.Context) (int, error) { return 2, nil }); err != nil {
		t.Fatal(err)
	}
	second := make(chan int, 1)
	go func() { v, _ := m.Get(context.Background(), "slow", slow); second <- v }()
	close(release)
	if a, b := <-first, <-second; a != 1 || b != 1 || calls.Load() != 1 {
		t.Fatalf("values %d, %d from %d computations; want 1, 1 from one", a, b, calls.Load())
	}
}

// TestKeptValueWhateverContext: a kept value is returned to a caller
// whose context is already done, every time (a select between the two
// ready cases would answer either at random).
func TestKeptValueWhateverContext(t *testing.T) {
	m := New[int](2)
	if _, err := m.Get(context.Background(), "k", func(context.Context) (int, error) { return 7, nil }); err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for range 200 {
		v, err := m.Get(done, "k", func(context.Context) (int, error) { t.Fatal("computed again"); return 0, nil })
		if err != nil || v != 7 {
			t.Fatalf("kept value with a done context: %v, %v; want 7", v, err)
		}
	}
}
