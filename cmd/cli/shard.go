package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseShard parses a --shard flag "i/n" (0 ≤ i < n): run part i of n of
// a study, as an array job of a batch system would (optd bound, optd search).
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			n, err = strconv.Atoi(strings.TrimSpace(b))
		}
	}
	if !ok || err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard = %q: want i/n with 0 ≤ i < n", s)
	}
	return i, n, nil
}
