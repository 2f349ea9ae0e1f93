package testenv

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTraceChecksums: every file listed in data/SHA256SUMS has that checksum,
// and every file in data/ (but the README and the list itself) is listed, so
// a trace changed or added by accident fails here.
func TestTraceChecksums(t *testing.T) {
	data := TraceData(t)
	f, err := os.Open(filepath.Join(data, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		want, rel, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q: want \"<sha256>  <path>\"", sc.Text())
		}
		rel = filepath.Clean(rel)
		listed[rel] = true
		if got := fileSHA256(t, filepath.Join(data, rel)); got != want {
			t.Errorf("%s: sha256 %s, SHA256SUMS says %s", rel, got, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(data, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(data, path)
		if rel != "README.md" && rel != "SHA256SUMS" && !listed[rel] {
			t.Errorf("%s is in data/ but not in SHA256SUMS", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) == 0 {
		t.Fatal("SHA256SUMS lists no file")
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
