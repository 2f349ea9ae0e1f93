// Package memo computes an expensive value once per key in the process and
// shares it: the placement policies that solve or fit before their first
// decision (mdp-optimal's MDP solve, the adp policies' fits) are built once
// per cluster registration, again when the server loads the cluster after
// a restart, and once per replication by bound and search, always from the
// same inputs.
//
// Two things set it apart from a map behind a sync.Once, both needed by a
// server whose callers have deadlines:
//
//   - A caller stops waiting when its own context ends (its deadline, a
//     client gone), with that context's error.
//   - The computation runs on a context of its own, detached from any one
//     caller's deadline, and is cancelled when every caller waiting for it
//     has left: a computation nobody waits for stops instead of burning a
//     core for minutes, and one caller giving up does not fail the others.
//
// A failed computation (cancelled included) is forgotten, so the next call
// computes again; a successful one is kept, at most Size of them, the
// oldest dropped first.
package memo

import (
	"context"
	"slices"
	"sync"
)

// Memo holds computed values by key. The zero Memo is not usable: use New.
type Memo[V any] struct {
	size int

	mu      sync.Mutex
	entries map[string]*entry[V]
	order   []string // keys of entries, oldest first
}

type entry[V any] struct {
	done    chan struct{} // closed when the computation ends
	cancel  context.CancelFunc
	waiters int // callers waiting on done (under Memo.mu)
	val     V
	err     error
}

// New returns a Memo keeping at most size values (size ≥ 1).
func New[V any](size int) *Memo[V] {
	return &Memo[V]{size: max(size, 1), entries: map[string]*entry[V]{}}
}

// Get returns the value of key, computing it with compute if it is neither
// kept nor being computed. compute's context carries ctx's values but not
// its deadline or cancellation; it is cancelled when every caller waiting
// for the value has left (see the package doc). Get returns ctx.Err() as
// soon as ctx ends, whether or not the computation goes on for others;
// a value already kept is returned whatever ctx (it costs nothing, and
// the answer must not depend on which of two ready cases a select picks).
func (m *Memo[V]) Get(ctx context.Context, key string, compute func(context.Context) (V, error)) (V, error) {
	m.mu.Lock()
	e, ok := m.entries[key]
	if !ok {
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		e = &entry[V]{done: make(chan struct{}), cancel: cancel}
		m.add(key, e)
		go m.run(cctx, key, e, compute)
	}
	e.waiters++
	m.mu.Unlock()

	select {
	case <-e.done:
		// Kept or just finished: ctx, even if done, is not consulted.
		return m.leave(e)
	default:
	}
	select {
	case <-e.done:
		return m.leave(e)
	case <-ctx.Done():
		m.mu.Lock()
		e.waiters--
		if e.waiters == 0 {
			select {
			case <-e.done:
			default:
				// Nobody waits any more: stop it, and forget it now so
				// that a caller arriving before it has stopped starts
				// afresh instead of sharing its cancellation.
				e.cancel()
				if m.entries[key] == e {
					m.remove(key)
				}
			}
		}
		m.mu.Unlock()
		var zero V
		return zero, ctx.Err()
	}
}

// leave returns e's value to a caller that waited for it.
func (m *Memo[V]) leave(e *entry[V]) (V, error) {
	m.mu.Lock()
	e.waiters--
	m.mu.Unlock()
	return e.val, e.err
}

// run computes e's value and publishes it; a failure removes e so that
// the next Get computes again.
func (m *Memo[V]) run(ctx context.Context, key string, e *entry[V], compute func(context.Context) (V, error)) {
	val, err := compute(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	e.val, e.err = val, err
	e.cancel()
	close(e.done)
	if err != nil && m.entries[key] == e {
		m.remove(key)
	}
}

// add keeps e under key, dropping the oldest finished entries beyond
// size. An entry still being computed is never dropped (a later call for
// its key would start the same work again beside it), so the memo may
// hold more than size entries while more than size are being computed.
func (m *Memo[V]) add(key string, e *entry[V]) {
	m.entries[key] = e
	m.order = append(m.order, key)
	for i := 0; len(m.order) > m.size && i < len(m.order); {
		k := m.order[i]
		select {
		case <-m.entries[k].done:
			delete(m.entries, k)
			m.order = slices.Delete(m.order, i, i+1)
		default:
			i++ // still running
		}
	}
}

func (m *Memo[V]) remove(key string) {
	delete(m.entries, key)
	m.order = slices.DeleteFunc(m.order, func(k string) bool { return k == key })
}

// Len returns the number of values kept or being computed.
func (m *Memo[V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}
