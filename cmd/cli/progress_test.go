package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/internal/testenv"
)

// A plain progress prints periodic lines with the phase, the count of
// what was asked for and the note, and nothing after Finish; none prints
// nothing; auto off a terminal is plain.
func TestPlainProgressLines(t *testing.T) {
	defer func(d time.Duration) { PlainInterval = d }(PlainInterval)
	PlainInterval = 10 * time.Millisecond
	for _, mode := range []string{ProgressPlain, ProgressAuto} {
		var w testenv.SyncBuffer
		p := NewProgressMode(&w, mode, "optd search", "search", 60, "evaluations")
		p.Set(14, 60)
		p.Note("best 23.4")
		deadline := time.Now().Add(10 * time.Second) // a guard against a hang, not an assertion
		for !strings.Contains(w.String(), "\n") && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		p.Phase("validation", 3, 10, "simulations")
		for !strings.Contains(w.String(), "validation") && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		p.Finish()
		p.Finish()
		out := w.String()
		first, _, _ := strings.Cut(out, "\n")
		if !strings.HasPrefix(first, "optd search: ") || !strings.HasSuffix(first, "search  14/60 evaluations  best 23.4") {
			t.Errorf("%s: first line %q", mode, first)
		}
		if !strings.Contains(out, "validation  3/10 simulations  best 23.4\n") {
			t.Errorf("%s: no validation line in %q", mode, out)
		}
		time.Sleep(3 * PlainInterval)
		if w.String() != out {
			t.Errorf("%s: lines after Finish", mode)
		}
	}
	var w testenv.SyncBuffer
	p := NewProgressMode(&w, ProgressNone, "optd search", "search", 60, "evaluations")
	p.Set(1, 60)
	time.Sleep(3 * PlainInterval)
	p.Finish()
	if w.String() != "" {
		t.Errorf("none: %q", w.String())
	}
}

func TestProgressModeFlag(t *testing.T) {
	for _, m := range ProgressModes {
		if err := CheckProgressMode(m); err != nil {
			t.Error(err)
		}
	}
	if err := CheckProgressMode("fancy"); err == nil || err.Error() != `--progress = "fancy": want one of auto, bar, plain, none` {
		t.Errorf("got %v", err)
	}
}
