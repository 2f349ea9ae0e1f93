package cli

import "testing"

func TestParseShard(t *testing.T) {
	if i, n, err := ParseShard(" 2 / 5 "); err != nil || i != 2 || n != 5 {
		t.Errorf("2/5: %d, %d, %v", i, n, err)
	}
	for _, bad := range []string{"", "1", "5/5", "-1/3", "a/3", "1/0", "1/b"} {
		if _, _, err := ParseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
