package robustness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/optd/optd/cmd"
	"github.com/optd/optd/cmd/cli"
	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// envServe makes the test binary `optd serve --data-dir DIR` (TestMain).
const envServe = "OPTD_ROBUSTNESS_SERVE"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envServe); dir != "" {
		// The registration client's clusters accumulate over the cycles
		// (each must survive every kill): the harness checks durability,
		// so the cluster limit is lifted out of its way.
		os.Exit(cli.Run(context.Background(), cmd.NewRootCommand(),
			[]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--shutdown-timeout", "2s", "--max-clusters", "1000000"}, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

var (
	listening = regexp.MustCompile(`msg=listening addr=(\S+)`)
	storeOpen = regexp.MustCompile(`msg="store opened" .*duration_ms=([0-9.]+)`)
)

// server is an `optd serve` process.
type server struct {
	cmd    *exec.Cmd
	addr   string
	conn   *grpc.ClientConn
	client optdv1.ClusterServiceClient
	// stderr collects what the process wrote on stderr; addrs receives
	// the address it listens on; exited is closed when it exits.
	mu     sync.Mutex
	stderr strings.Builder
	addrs  chan string
	exited chan struct{}
}

// spawn starts a server process on dir without waiting for it.
func spawn(t *testing.T, dir string) *server {
	t.Helper()
	s := &server{exited: make(chan struct{}), addrs: make(chan string, 1)}
	s.cmd = exec.Command(os.Args[0], "-test.run=^$")
	s.cmd.Env = append(os.Environ(), envServe+"="+dir)
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.stderr.WriteString(line + "\n")
			s.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				s.addrs <- m[1]
			}
		}
		io.Copy(io.Discard, pipe)
		s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.kill() })
	return s
}

// startServer starts a server on dir and returns once it listens, or once
// it exits (a refusal to start: s.addr is empty).
func startServer(t *testing.T, dir string) *server {
	t.Helper()
	s := spawn(t, dir)
	select {
	case s.addr = <-s.addrs:
	case <-s.exited:
		return s
	case <-time.After(60 * time.Second):
		t.Fatalf("the server neither listened nor exited:\n%s", s.log())
	}
	var err error
	s.conn, err = grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	s.client = optdv1.NewClusterServiceClient(s.conn)
	return s
}

// waitServing waits until the server reports SERVING; false if it exited.
func (s *server) waitServing(t *testing.T) bool {
	t.Helper()
	hc := healthpb.NewHealthClient(s.conn)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return false
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the server never reported SERVING:\n%s", s.log())
	return false
}

func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// signal sends sig and waits for the process to exit.
func (s *server) signal(sig syscall.Signal) {
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Signal(sig)
		<-s.exited
	}
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

func (s *server) kill() { s.signal(syscall.SIGKILL) }

// panicked reports whether the process died of a panic or a fault.
func (s *server) panicked() bool {
	l := s.log()
	return strings.Contains(l, "panic:") || strings.Contains(l, "fatal error:") || strings.Contains(l, "SIGBUS") || strings.Contains(l, "SIGSEGV")
}

// openMS is how long the server took to open its store (-1: not logged).
func (s *server) openMS() float64 {
	m := storeOpen.FindStringSubmatch(s.log())
	if m == nil {
		return -1
	}
	ms, _ := strconv.ParseFloat(m[1], 64)
	return ms
}

func (s *server) String() string { return fmt.Sprintf("server %s (pid %d)", s.addr, s.cmd.Process.Pid) }
