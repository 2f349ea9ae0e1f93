package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Progress modes of the --progress flag.
const (
	// ProgressAuto is a bar on a terminal, plain lines otherwise.
	ProgressAuto = "auto"
	// ProgressBar is a bar, redrawn in place.
	ProgressBar = "bar"
	// ProgressPlain is one line every PlainInterval, for logs and batch
	// jobs.
	ProgressPlain = "plain"
	// ProgressNone prints nothing.
	ProgressNone = "none"
)

// ProgressModes lists the modes in the order --help shows them.
var ProgressModes = []string{ProgressAuto, ProgressBar, ProgressPlain, ProgressNone}

// PlainInterval is the period of the plain progress lines.
var PlainInterval = 5 * time.Second

// QuietPlainProgress stops the plain progress lines for the rest of the
// process. It is for tests that check a verb's stderr is empty, which a run
// slowed past PlainInterval (-race on a loaded machine) would otherwise
// fill with progress lines.
func QuietPlainProgress() { PlainInterval = 24 * time.Hour }

// AddProgressFlag registers --progress MODE on fs.
func AddProgressFlag(fs *pflag.FlagSet, mode *string) {
	fs.StringVar(mode, "progress", ProgressAuto, "progress on stderr: "+strings.Join(ProgressModes, ", ")+
		" (auto: a bar on a terminal, a plain line every "+PlainInterval.String()+" otherwise)")
}

// CheckProgressMode returns an error naming the flag unless mode is one of
// ProgressModes.
func CheckProgressMode(mode string) error {
	if !slices.Contains(ProgressModes, mode) {
		return fmt.Errorf("--progress = %q: want one of %s", mode, strings.Join(ProgressModes, ", "))
	}
	return nil
}

// Progress reports a verb's long work on stderr: the phase, the count of
// what the user asked for (evaluations, policy-replications, jobs) and a
// note such as the best objective so far; as a bar on a terminal or as
// plain periodic lines otherwise (ProgressAuto), so that a run off a
// terminal is never silent for long, and never on stdout. It is safe for
// concurrent use; the zero of a mode (ProgressNone) does nothing.
type Progress struct {
	mu          sync.Mutex
	w           io.Writer
	name        string // "optd search"
	bar         *progressbar.ProgressBar
	plain       bool
	start       time.Time
	phase, unit string
	done, total int
	note        string
	stop        chan struct{}
	stopped     sync.WaitGroup
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// NewProgressMode starts the progress of the verb called name in the given
// mode (one of ProgressModes; CheckProgressMode first) at phase, counting
// total units ("evaluations").
func NewProgressMode(w io.Writer, mode, name, phase string, total int, unit string) *Progress {
	if mode == ProgressAuto {
		mode = ProgressPlain
		if IsTerminal(w) {
			mode = ProgressBar
		}
	}
	p := &Progress{w: w, name: name, start: time.Now(), phase: phase, unit: unit, total: total}
	switch mode {
	case ProgressBar:
		p.bar = progressbar.NewOptions(max(total, 1),
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(p.description()),
			progressbar.OptionShowCount(),
			progressbar.OptionClearOnFinish(),
		)
	case ProgressPlain:
		p.plain = true
		p.stop = make(chan struct{})
		p.stopped.Add(1)
		go p.tick(p.stop)
	}
	return p
}

func (p *Progress) tick(stop <-chan struct{}) {
	defer p.stopped.Done()
	t := time.NewTicker(PlainInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.line()
			p.mu.Unlock()
		}
	}
}

// description is the bar's text: the phase and the note.
func (p *Progress) description() string {
	d := p.phase
	if p.unit != "" {
		d += " (" + p.unit + ")"
	}
	if p.note != "" {
		d += ", " + p.note
	}
	return d
}

// line prints one plain line (mu held).
func (p *Progress) line() {
	var b strings.Builder
	if p.name != "" {
		b.WriteString(p.name + ": ")
	}
	fmt.Fprintf(&b, "%6.0fs  %s", time.Since(p.start).Seconds(), p.phase)
	if p.total > 0 {
		fmt.Fprintf(&b, "  %d/%d", p.done, p.total)
		if p.unit != "" {
			b.WriteString(" " + p.unit)
		}
	}
	if p.note != "" {
		b.WriteString("  " + p.note)
	}
	fmt.Fprintln(p.w, b.String())
}

// Add advances the count by n.
func (p *Progress) Add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// Set shows done of total units (total may change as work is discovered).
func (p *Progress) Set(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.total = done, total
	if p.bar != nil {
		if int64(total) != p.bar.GetMax64() && total > 0 {
			p.bar.ChangeMax(total)
		}
		_ = p.bar.Set(done)
	}
}

// Phase starts a new phase counting total units (a plain progress shows it
// in its next line: a run shorter than PlainInterval prints nothing).
func (p *Progress) Phase(phase string, done, total int, unit string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.done, p.total, p.unit = phase, done, total, unit
	if p.bar != nil {
		p.bar.Describe(p.description())
		if total > 0 {
			p.bar.ChangeMax(total)
		}
		_ = p.bar.Set(done)
	}
}

// Note sets the note shown after the count ("best 23.4").
func (p *Progress) Note(note string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.note = note
	if p.bar != nil {
		p.bar.Describe(p.description())
	}
}

// Describe changes the phase's description, keeping the count.
func (p *Progress) Describe(phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase = phase
	if p.bar != nil {
		p.bar.Describe(p.description())
	}
}

// Finish clears the bar or stops the plain lines; later calls do nothing.
func (p *Progress) Finish() {
	p.mu.Lock()
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
	stop := p.stop
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		p.stopped.Wait()
	}
}
