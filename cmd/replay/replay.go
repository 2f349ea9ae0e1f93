// Package replay implements `optd replay`, the reference executor: the
// cluster simulator's nodes and jobs driven through optd's gRPC API
// (RegisterCluster, SubmitJob, a Heartbeat per node heartbeat, an
// out-of-band Heartbeat per task completion, JobFinished) instead of calling
// the policies in process.
//
//	optd replay --scenario NAME|FILE --policy SPEC [--server ADDR] [--seed N]
//	            [--cluster-id ID] [--token T] [--tls-ca FILE] [--explain]
//
// With the same scenario, policy and seed it prints exactly what `optd
// simulate` prints: the server's decisions are the in-process policy's.
package replay

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/simulate"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/sim"
)

type options struct {
	scenario, policy, server string
	placement                string
	placementModel           string
	seed                     uint64
	clusterID, token, tlsCA  string
	explain, keep            bool
	progress                 string
}

// NewCommand returns the `replay` command.
func NewCommand(env *cli.Env) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "replay --scenario NAME|FILE --policy SPEC [--placement SPEC [--placement-model FILE]] [--server ADDR] [--seed N]",
		Short: "Drive a simulated cluster through an optd server's gRPC API",
		Long: `Runs the cluster simulator of 'optd simulate' with a running optd server as
its scheduler: the scenario's cluster is registered with the heartbeat policy
SPEC, every job is submitted with its tasks and input blocks when it arrives,
every node heartbeat goes to ClusterService.Heartbeat with the node's running
attempts and their progress and the simulator carries out the actions it
returns, every task completion is reported at once (an out-of-band heartbeat),
and JobFinished ends each job. The output is the JSON of 'optd simulate', and
with the same scenario, policy and seed it is identical to it. With
--placement the cluster is registered with that reduce-placement policy (a
name, with a family's parameters if any: "state-threshold:base=2"); a
policy that needs the cluster's queueing model (adp-penalty, adp-bid-price,
rollout) takes it from --placement-model, a placement scenario file, as
'optd simulate' does, slot costs included. The cluster is
deleted from the server at the end (also after a failure) unless --keep.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, env, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "", "built-in scenario name or JSON scenario file (as for optd simulate)")
	f.StringVar(&o.policy, "policy", "", "heartbeat policy spec: assignment[+add-on...]")
	f.StringVar(&o.placement, "placement", "", "reduce-placement policy the cluster is registered with, which then places reducers (as for optd simulate)")
	f.StringVar(&o.placementModel, "placement-model", "", "placement scenario file: the queueing model a --placement policy that needs one (adp-penalty, adp-bid-price, rollout) is built on (as for optd simulate)")
	f.StringVar(&o.server, "server", "127.0.0.1:7443", "address of the optd server")
	f.Uint64Var(&o.seed, "seed", simulate.DefaultSeed, "seed of block replicas, task works and skew (and of the policy)")
	f.StringVar(&o.clusterID, "cluster-id", "", "id to register the cluster under (default: replay-SCENARIO-TIME)")
	f.StringVar(&o.token, "token", os.Getenv("OPTD_TOKEN"), "bearer token the server requires (default $OPTD_TOKEN)")
	f.StringVar(&o.tlsCA, "tls-ca", "", "PEM CA certificate: connect with TLS, verifying the server against it")
	f.BoolVar(&o.keep, "keep", false, "keep the cluster on the server after the replay (default: delete it)")
	f.BoolVar(&o.explain, "explain", false, "ask every heartbeat for its vetoes and print them as optd simulate --explain does")
	cli.AddProgressFlag(f, &o.progress)
	_ = cmd.MarkFlagRequired("scenario")
	_ = cmd.MarkFlagRequired("policy")
	return cmd
}

func run(cmd *cobra.Command, env *cli.Env, o options) error {
	if err := cli.CheckProgressMode(o.progress); err != nil {
		return err
	}
	sc, err := simulate.LoadScenario(o.scenario)
	if err != nil {
		return err
	}
	placement, err := placementPolicy(o)
	if err != nil {
		return err
	}
	conn, err := dial(o)
	if err != nil {
		return err
	}
	defer conn.Close()
	id := o.clusterID
	if id == "" {
		id = fmt.Sprintf("replay-%s-%d", sc.Name, time.Now().UnixNano())
	}
	ctx := cmd.Context()
	if o.token != "" {
		ctx = withToken(ctx, o.token)
	}
	cfg := sc.LedgerConfig()
	x := &executor{client: optdv1.NewClusterServiceClient(conn), cluster: id, resources: cfg.Cluster.Resources, explain: o.explain}
	if _, err := x.client.RegisterCluster(ctx, registerRequest(id, cfg, o.policy, placement, o.seed)); err != nil {
		return fmt.Errorf("registering cluster %q with %s: %w", id, o.server, err)
	}
	if !o.keep {
		defer func() {
			// A fresh deadline: the replay's context may be what ended it.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if _, err := x.client.DeleteCluster(dctx, &optdv1.DeleteClusterRequest{ClusterId: id}); err != nil {
				env.Logger.Warn("could not delete the replay's cluster", "cluster_id", id, "err", err)
			}
		}()
	}
	prog := cli.NewProgressMode(cmd.ErrOrStderr(), o.progress, "optd replay", "replaying through "+o.server, len(sc.Jobs), "jobs finished")
	start := time.Now()
	res, err := sim.RunCluster(ctx, sc, nil, sim.ClusterOptions{Seed: o.seed, ControlPlane: x, Explain: o.explain, Progress: prog.Set})
	prog.Finish()
	if err != nil {
		return fmt.Errorf("replay on cluster %q: %w", id, err)
	}
	el := time.Since(start)
	env.Logger.Info("replay done", "cluster_id", id, "calls", x.calls, "seconds", el.Seconds(),
		"calls_per_s", float64(x.calls)/el.Seconds())
	return cli.WriteJSON(cmd.OutOrStdout(), simulate.Output{Scenario: sc.Name, Policy: o.policy, Placement: o.placement, Seed: o.seed, ClusterResult: res})
}

func dial(o options) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if o.tlsCA != "" {
		pem, err := os.ReadFile(o.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", o.tlsCA)
		}
		creds = credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	}
	conn, err := grpc.NewClient(o.server, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("--server %q: %w", o.server, err)
	}
	return conn, nil
}

// withToken sends the bearer token with every call.
func withToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}
