#!/usr/bin/python3
"""A minimal optd.v1 client: register a cluster, submit a job, place its reducers, ask what a node starts.

Needs Debian's python3-grpcio (with python3-protobuf) and protoc
(protobuf-compiler). The message classes are generated from
proto/optd/v1/optd.proto at start into a temporary directory; the RPCs are
called through grpcio's generic channel methods, so no grpc code generator
is needed (Debian's python3-grpc-tools 1.14 predates proto3 `optional`).

    /usr/bin/python3 examples/python/optd_client.py --addr 127.0.0.1:7443

Prints the placement, the first heartbeat's actions and the threshold
table of the example workload as one JSON object on stdout.
"""
import argparse
import importlib
import json
import os
import time
import subprocess
import sys
import tempfile

import grpc
from google.protobuf import json_format

EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proto", "optd", "v1")


def load_messages():
    """Generates optd_pb2 with protoc and imports it."""
    with tempfile.TemporaryDirectory(prefix="optd-pb2-") as out:
        subprocess.run(["protoc", "-I", PROTO_DIR, "--python_out", out, os.path.join(PROTO_DIR, "optd.proto")], check=True)
        sys.path.insert(0, out)
        try:
            return importlib.import_module("optd_pb2")
        finally:
            sys.path.remove(out)


def rpc(channel, service, method, request, response_type, token=None):
    """Calls /optd.v1.<service>/<method> with the given request message."""
    call = channel.unary_unary(
        f"/optd.v1.{service}/{method}",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response_type.FromString,
    )
    metadata = [("authorization", f"Bearer {token}")] if token else None
    return call(request, timeout=10, metadata=metadata)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--addr", default="127.0.0.1:7443")
    # A unique id by default, and the cluster deleted at the end, so that the
    # example can run any number of times against the same server.
    ap.add_argument("--cluster", default=f"py-demo-{os.getpid()}-{int(time.time() * 1000)}")
    ap.add_argument("--keep", action="store_true", help="keep the cluster on the server (default: delete it)")
    ap.add_argument("--token", default=os.environ.get("OPTD_TOKEN"))
    args = ap.parse_args()
    pb = load_messages()
    with grpc.insecure_channel(args.addr) as ch:
        # 4 nodes of 8 GB and 4 vcores, 2 reduce slots each; reduce placement
        # by the receding-horizon policy, heartbeats decided by HaSTE-A.
        nodes = [pb.Node(id=f"n{i}", rack=f"r{i // 2}", reduce_slots=2,
                         capacity={"memory_mb": 8192, "vcores": 4}) for i in range(4)]
        rpc(ch, "ClusterService", "RegisterCluster",
            pb.RegisterClusterRequest(cluster_id=args.cluster, nodes=nodes,
                                      policy=pb.PlacementPolicy(name="receding-horizon"),
                                      heartbeat=pb.HeartbeatPolicy(spec="haste-a", resources=["memory_mb", "vcores"])),
            pb.RegisterClusterResponse, args.token)
        try:
            # 40 maps, each input block on two nodes; 1 GB / 1 vcore a map.
            maps = [pb.MapInput(nodes=[f"n{m % 4}", f"n{(m + 1) % 4}"]) for m in range(40)]
            rpc(ch, "ClusterService", "SubmitJob",
                pb.SubmitJobRequest(cluster_id=args.cluster, job_id="wordcount-1", maps=40, reduces=3,
                                    map_demand={"memory_mb": 1024, "vcores": 1},
                                    reduce_demand={"memory_mb": 2048, "vcores": 1},
                                    stages=[pb.JobStage(maps=maps, reduces=3)]),
                pb.SubmitJobResponse, args.token)
            beat = rpc(ch, "ClusterService", "Heartbeat",
                       pb.HeartbeatRequest(cluster_id=args.cluster, node_id="n0"),
                       pb.HeartbeatResponse, args.token)
            placed = rpc(ch, "ClusterService", "PlaceReduces",
                         pb.PlaceReducesRequest(cluster_id=args.cluster, job_id="wordcount-1", data_mb=6144),
                         pb.PlaceReducesResponse, args.token)
            freed = rpc(ch, "ClusterService", "JobFinished",
                        pb.JobFinishedRequest(cluster_id=args.cluster, job_id="wordcount-1"),
                        pb.JobFinishedResponse, args.token)
        finally:
            if not args.keep:
                rpc(ch, "ClusterService", "DeleteCluster", pb.DeleteClusterRequest(cluster_id=args.cluster),
                    pb.DeleteClusterResponse, args.token)
        # Stateless: a workload file of the CLI is the typed Workload message
        # as it is (the same field names), read with protobuf's json_format.
        with open(os.path.join(EXAMPLES_DIR, "workload.json")) as f:
            workload = json_format.Parse(f.read(), pb.Workload())
        table = rpc(ch, "OptimizeService", "ComputeThresholds",
                    pb.ComputeThresholdsRequest(workload=workload, jobs=3),
                    pb.ComputeThresholdsResponse, args.token)
    print(json.dumps({
        "policy": placed.policy,
        "reason": placed.reason,
        "slots": [{"slot": s.slot, "node_id": s.node_id, "fetch_cost": s.fetch_cost} for s in placed.slots],
        "fetch_cost": placed.fetch_cost,
        "freed_slots": freed.freed_slots,
        "heartbeat": [{"kind": a.kind, "task_type": a.task_type, "task": a.task, "attempt_id": a.attempt_id,
                       "locality": a.locality, "reason": a.reason} for a in beat.actions],
        "thresholds": [list(s.thresholds) for s in table.stages],
    }))


if __name__ == "__main__":
    main()
