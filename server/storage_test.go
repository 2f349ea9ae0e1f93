package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/optd/optd/policy/placement"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// waitHealth waits until the server's overall health status is want.
func waitHealth(t *testing.T, ts *testServer, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	hc := healthpb.NewHealthClient(ts.conn)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{}); err == nil && r.GetStatus() == want {
			return
		}
	}
	t.Fatalf("health never became %v", want)
}

// gauge reads a gauge of m.
func gauge(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// storeServer serves a store on fs (its health driving the server's) with
// metrics, and registers cluster "c".
func storeServer(t *testing.T, fs vfs.FS, o store.Options) (*testServer, *Metrics) {
	t.Helper()
	o.FS = fs
	st, err := store.OpenWith("/data", o)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics()
	ts := serveStore(t, st, t.TempDir(), Options{Metrics: m}, nil)
	if _, err := ts.cluster.RegisterCluster(ctxT(t), costsCluster("c", placement.NameGreedy, 1, 2)); err != nil {
		t.Fatal(err)
	}
	return ts, m
}

func setFree(fs *vfs.MemFS, free uint64) {
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: free, TotalBytes: 1 << 40, UsedBytes: 1<<40 - free})
}

// TestDiskFullIsReadOnly: when the data directory's file system runs low,
// the server reports NOT_SERVING and optd_store_read_only 1, refuses
// changes with ResourceExhausted (saying why), still answers reads, and
// serves changes again, SERVING, once space is freed; nothing acknowledged
// is lost.
func TestDiskFullIsReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	setFree(fs, 1<<30)
	ts, m := storeServer(t, fs, store.Options{MinFreeBytes: 16 << 20, CheckInterval: 5 * time.Millisecond})
	ctx := ctxT(t)
	submit := func(id string) error {
		_, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: id, Reduces: 1})
		return err
	}
	if err := submit("before"); err != nil {
		t.Fatal(err)
	}
	setFree(fs, 4<<20)
	waitHealth(t, ts, healthpb.HealthCheckResponse_NOT_SERVING)
	if g := gauge(t, m, "optd_store_read_only"); g != 1 {
		t.Errorf("optd_store_read_only = %v while read-only", g)
	}
	err := submit("refused")
	wantCode(t, err, codes.ResourceExhausted, "below the reserve")
	gs, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "c"})
	if err != nil || len(gs.GetState().GetJobs()) != 1 {
		t.Fatalf("GetClusterState while read-only: %v, %v; want the job acknowledged before", gs, err)
	}
	setFree(fs, 1<<30)
	waitHealth(t, ts, healthpb.HealthCheckResponse_SERVING)
	if err := submit("refused"); err != nil {
		t.Fatalf("the refused change, again once space is back: %v", err)
	}
	if g := gauge(t, m, "optd_store_read_only"); g != 0 {
		t.Errorf("optd_store_read_only = %v once writable", g)
	}
	gs, err = ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "c"})
	if err != nil || len(gs.GetState().GetJobs()) != 2 {
		t.Fatalf("GetClusterState: %v, %v; want both jobs", gs, err)
	}
}

// TestFailedSyncStopsServing: a failed sync of the store's log makes the
// call fail with Unavailable (saying the change may or may not be
// durable), every later call too, reads included, and the server
// NOT_SERVING with optd_store_failed 1.
func TestFailedSyncStopsServing(t *testing.T) {
	var armed atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && strings.HasSuffix(op.Path, ".log") && (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData) {
			return syscall.EIO
		}
		return nil
	}))
	ts, m := storeServer(t, fs, store.Options{MinFreeBytes: -1})
	ctx := ctxT(t)
	armed.Store(true)
	_, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: "j", Reduces: 1})
	wantCode(t, err, codes.Unavailable, "may or may not be durable")
	waitHealth(t, ts, healthpb.HealthCheckResponse_NOT_SERVING)
	_, err = ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "c"})
	wantCode(t, err, codes.Unavailable, "restart")
	_, err = ts.cluster.RegisterCluster(ctx, costsCluster("d", placement.NameGreedy, 1))
	wantCode(t, err, codes.Unavailable, "")
	if g := gauge(t, m, "optd_store_failed"); g != 1 {
		t.Errorf("optd_store_failed = %v after the failure", g)
	}
}

// TestStoreErrorCodes: the store's errors reach clients by their kind: a
// store read-only for lack of space is ResourceExhausted, a failed one
// Unavailable, damaged data DataLoss (each with the store's message, which
// says what to do), a locked or newer data directory Internal (the cause
// only in the log); wrapping does not change the code.
func TestStoreErrorCodes(t *testing.T) {
	damage := &store.DamageError{File: "state/000002.log", Offset: 40, Reason: "checksum mismatch"}
	for _, tc := range []struct {
		err  error
		code codes.Code
		msg  string
	}{
		{store.ErrNotFound, codes.NotFound, "not found"},
		{store.ErrExists, codes.AlreadyExists, "already exists"},
		{store.ErrInvalid, codes.InvalidArgument, "invalid"},
		{store.ErrReadOnly, codes.ResourceExhausted, "read-only"},
		{store.ErrFailed, codes.Unavailable, "storage failed"},
		{store.ErrCorrupt, codes.DataLoss, "damaged"},
		{damage, codes.DataLoss, "state/000002.log"},
		{store.ErrLocked, codes.Internal, "internal error"},
		{store.ErrFormat, codes.Internal, "internal error"},
		{store.ErrAborted, codes.Internal, "internal error"},
	} {
		for _, err := range []error{tc.err, fmt.Errorf("cluster %q: %w", "c", tc.err)} {
			wantCode(t, statusOf(t.Context(), slog.New(slog.DiscardHandler), "/m", err), tc.code, tc.msg)
		}
	}
}
