package docs

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/internal/testenv"
)

// shBlock is a ```sh block of a page: every command a reader is told to
// type.
var shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// notRunHere are blocks the test cannot run, and why: they set up the
// machine and serve, run the whole suite, or regenerate the half-hour
// report.
var notRunHere = map[string]string{
	"scripts/serve.sh": "installs packages and serves until stopped",
	"make bench":       "regenerates the committed report (half an hour)",
}

// serveLine is the README's start of a server; the test starts the one
// server every block shares instead (and stops it at the end).
var serveLine = regexp.MustCompile(`(?m)^bin/optd serve .*$`)

// buildLine is the README's build of the command line; the test builds the
// binary once (the scratch directory has no go.mod).
var buildLine = regexp.MustCompile(`(?m)^go build -o bin/optd \./cmd/optd\s*(#.*)?$`)

// TestDocCommands runs every ```sh block of README.md and docs/*.md, in
// order, with bash -euo pipefail, in a scratch directory that holds the
// repository's examples, test inputs and traces and a freshly built
// bin/optd; blocks that call the gRPC API get a live `optd serve` on
// 127.0.0.1:7443. A block that fails fails the test with its output, so the
// documentation cannot rot. It runs the README's full examples (193 s on 2
// cores): set OPTD_DOC_COMMANDS=1, or run `make doc-commands`.
func TestDocCommands(t *testing.T) {
	if os.Getenv("OPTD_DOC_COMMANDS") == "" {
		t.Skip("runs every documented command (about four minutes): set OPTD_DOC_COMMANDS=1 or run make doc-commands")
	}
	root := testenv.ModuleRoot(t)
	work := t.TempDir()
	for _, d := range []string{"examples", "search", "cmd", "data", "docs", "sim", "models"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", filepath.Join(work, "bin", "optd"), "./cmd/optd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	var server *exec.Cmd
	defer func() {
		if server != nil {
			_ = server.Process.Signal(os.Interrupt)
			_ = server.Wait()
		}
	}()
	ran := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for _, m := range shBlock.FindAllSubmatch(data, -1) {
			block := string(m[1])
			first, _, _ := strings.Cut(block, "\n")
			if why := skipReason(block); why != "" {
				t.Logf("%s: not run here (%s): %s", rel, why, first)
				continue
			}
			if strings.Contains(block, "127.0.0.1:7443") && server == nil {
				server = startServer(t, work)
			}
			block = serveLine.ReplaceAllString(block, "# (the test's server is running)")
			block = buildLine.ReplaceAllString(block, "# (the test built bin/optd)")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
			cmd.Dir = work
			start := time.Now()
			out, err := cmd.CombinedOutput()
			cancel()
			ran++
			if err != nil {
				t.Errorf("%s: the block starting %q fails: %v\n%s", rel, first, err, out)
				continue
			}
			t.Logf("%s: ran %q in %.0f s", rel, first, time.Since(start).Seconds())
		}
	}
	if ran < 8 {
		t.Fatalf("ran only %d blocks", ran)
	}
}

func skipReason(block string) string {
	for marker, why := range notRunHere {
		if strings.Contains(block, marker) {
			return why
		}
	}
	if strings.Contains(block, "java ") {
		if _, err := exec.LookPath("java"); err != nil {
			return "no java on this machine (scripts/setup.sh --test installs default-jdk-headless)"
		}
	}
	return ""
}

// startServer starts bin/optd serve on 127.0.0.1:7443, with the HTTP/JSON
// gateway on 127.0.0.1:8080 as the docs' gateway block asks, in work and
// waits until it accepts connections.
func startServer(t *testing.T, work string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(filepath.Join(work, "bin", "optd"), "serve", "--listen", "127.0.0.1:7443", "--gateway-listen", "127.0.0.1:8080", "--data-dir", filepath.Join(work, "optd-data"))
	cmd.Dir = work
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a guard against a hang, not an assertion
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", "127.0.0.1:7443"); err == nil {
			c.Close()
			time.Sleep(2 * time.Second) // the health service turns SERVING after the self-checks
			return cmd
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("optd serve did not listen on 127.0.0.1:7443 within a minute")
	return nil
}
