package cli

import (
	"io"
	"os"
	"sync"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress renders a progress bar on w when w is a terminal and does
// nothing otherwise, so that a verb's long work can report progress without
// polluting redirected output (JSON goes to stdout, the bar to stderr). It
// is safe for concurrent use.
type Progress struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

// NewProgress returns a bar of total steps described by desc on w (a verb
// passes cmd.ErrOrStderr()).
func NewProgress(w io.Writer, total int, desc string) *Progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || total <= 0 {
		return &Progress{}
	}
	return &Progress{bar: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(),
	)}
}

// Add advances the bar by n steps.
func (p *Progress) Add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// Set shows done of total steps (total may change as work is discovered).
func (p *Progress) Set(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		if int64(total) != p.bar.GetMax64() {
			p.bar.ChangeMax(total)
		}
		_ = p.bar.Set(done)
	}
}

// Describe changes the bar's description.
func (p *Progress) Describe(desc string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Describe(desc)
	}
}

// Finish clears the bar; later calls do nothing.
func (p *Progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}
