package mdp

import "cmp"

// minHeap is a binary min-heap of values v by keys k (the free slots by
// cost rank of greedyTraceCost, the nodes by distance of levelFlows'
// Dijkstra).
type minHeap[K cmp.Ordered, V any] struct {
	k []K
	v []V
}

func (h *minHeap[K, V]) len() int { return len(h.k) }

func (h *minHeap[K, V]) reset() { h.k, h.v = h.k[:0], h.v[:0] }

func (h *minHeap[K, V]) push(k K, v V) {
	h.k, h.v = append(h.k, k), append(h.v, v)
	for i := len(h.k) - 1; i > 0; {
		p := (i - 1) / 2
		if h.k[p] <= h.k[i] {
			break
		}
		h.swap(p, i)
		i = p
	}
}

// pop removes and returns the least key and its value.
func (h *minHeap[K, V]) pop() (K, V) {
	k, v := h.k[0], h.v[0]
	last := len(h.k) - 1
	h.swap(0, last)
	h.k, h.v = h.k[:last], h.v[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.k[l] < h.k[m] {
			m = l
		}
		if r < last && h.k[r] < h.k[m] {
			m = r
		}
		if m == i {
			break
		}
		h.swap(i, m)
		i = m
	}
	return k, v
}

func (h *minHeap[K, V]) swap(a, b int) {
	h.k[a], h.k[b] = h.k[b], h.k[a]
	h.v[a], h.v[b] = h.v[b], h.v[a]
}
