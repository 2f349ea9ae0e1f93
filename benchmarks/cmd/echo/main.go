// Command echo is the bare gRPC server the load test (scripts/loadtest.sh)
// measures optd against in the same run: grpc-go with the standard health
// service (always SERVING) and reflection, no interceptors, no state, no
// disk. Its Health/Check throughput is the ceiling any RPC of optd can
// approach on the machine.
//
//	go run ./benchmarks/cmd/echo --listen 127.0.0.1:17444
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:17444", "host:port to serve on")
	flag.Parse()
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	reflection.Register(s)
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		s.GracefulStop()
	}()
	if err := s.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}
