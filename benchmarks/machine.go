package benchmarks

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/optd/optd/solver/lp"
)

// Machine describes where the report ran: every timing depends on it.
type Machine struct {
	CPU      string // model name from /proc/cpuinfo
	Cores    int    // runtime.NumCPU
	MemoryGB float64
	OS, Arch string
	Go       string // runtime.Version
	Clp      string // the Clp linked into solver/lp
	CBC      string // `cbc` on PATH, "" when absent
	GLPK     string // `glpsol` on PATH, "" when absent
}

// DescribeMachine reads the machine and the versions of the solvers.
func DescribeMachine(ctx context.Context) Machine {
	m := Machine{
		CPU: "unknown", Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		Go: runtime.Version(), Clp: lp.Version(),
	}
	if v := procField("/proc/cpuinfo", "model name"); v != "" {
		m.CPU = v
	}
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		if kb, err := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64); err == nil {
			m.MemoryGB = kb / (1 << 20)
		}
	}
	m.CBC = peerVersion(ctx, "cbc", []string{"-quit"}, regexp.MustCompile(`Version:\s*(\S+)`))
	m.GLPK = peerVersion(ctx, "glpsol", []string{"--version"}, regexp.MustCompile(`GLPK LP/MIP Solver\s*(\S+)`))
	return m
}

// procField returns the value of the first "key : value" line of a /proc
// file, "" when absent.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// peerVersion runs a peer solver to read its version ("" when it is not on
// PATH or says nothing recognizable).
func peerVersion(ctx context.Context, bin string, args []string, re *regexp.Regexp) string {
	path, err := exec.LookPath(bin)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if m := re.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

// Markdown describes the machine as a table.
func (m Machine) Markdown() string {
	absent := func(v string) string {
		if v == "" {
			return "not installed"
		}
		return v
	}
	var b strings.Builder
	b.WriteString("| machine | |\n|---|---|\n")
	fmt.Fprintf(&b, "| CPU | %s |\n| cores (GOMAXPROCS) | %d (%d) |\n| memory | %.1f GiB |\n| OS/arch | %s/%s |\n",
		m.CPU, m.Cores, runtime.GOMAXPROCS(0), m.MemoryGB, m.OS, m.Arch)
	fmt.Fprintf(&b, "| Go | %s |\n| Clp (linked) | %s |\n| CBC (`cbc`) | %s |\n| GLPK (`glpsol`) | %s |\n",
		m.Go, m.Clp, absent(m.CBC), absent(m.GLPK))
	return b.String()
}
