package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// BenchmarkGatewayOverhead: the same read (GetClusterState of a 3-slot
// cluster) over gRPC and over the HTTP/JSON gateway, in the same run, so
// that their ratio is the gateway's overhead (JSON both ways and HTTP/1.1).
func BenchmarkGatewayOverhead(b *testing.B) {
	ts := startServer(b, "", Options{GatewayListen: "127.0.0.1:0"}, nil)
	ctx := b.Context()
	if _, err := ts.cluster.RegisterCluster(ctx, costsCluster("c", "greedy", 1, 2, 3)); err != nil {
		b.Fatal(err)
	}
	b.Run("grpc", func(b *testing.B) {
		for range b.N {
			if _, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "c"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gateway", func(b *testing.B) {
		url := "http://" + ts.gateway + "/optd.v1.ClusterService/GetClusterState"
		for range b.N {
			postAll(b, url, `{"cluster_id":"c"}`)
		}
	})
}

// BenchmarkGatewayStreamOverhead: the same short streaming call
// (SimulateCluster of the built-in haste-table2 under fifo: a progress
// message per job, then the result twice) over gRPC and as
// newline-delimited JSON through the gateway, in the same run.
func BenchmarkGatewayStreamOverhead(b *testing.B) {
	ts := startServer(b, "", Options{GatewayListen: "127.0.0.1:0"}, nil)
	ctx := b.Context()
	req := &optdv1.SimulateClusterRequest{Builtin: "haste-table2", Policy: "fifo"}
	b.Run("grpc", func(b *testing.B) {
		for range b.N {
			st, err := ts.optimize.SimulateCluster(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := st.Recv(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("gateway", func(b *testing.B) {
		url := "http://" + ts.gateway + "/optd.v1.OptimizeService/SimulateCluster"
		for range b.N {
			postAll(b, url, `{"builtin":"haste-table2","policy":"fifo"}`)
		}
	})
}

// postAll posts body to url and reads the whole answer, which must be 200.
func postAll(b *testing.B, url, body string) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatal(resp.Status)
	}
}
