#!/usr/bin/env bash
# loadtest.sh: optd's gRPC load benchmark with ghz (issue "gRPC service"),
# beside a bare grpc-go server (benchmarks/cmd/echo) measured in the same run
# at the same concurrency.
#
#   scripts/loadtest.sh [--slots 1000] [--concurrency 16] [--cycles 5] [--out DIR] [--no-install]
#                       [--heartbeat-nodes 100] [--heartbeat-policy fair]
#
# ghz and grpcurl are installed with `go install` unless --no-install, which
# exits with status 3 when they are missing.
#
# PlaceReduces is stateful: a job must be submitted first and its reducers hold
# slots until JobFinished. So the load comes in cycles: ghz submits --slots
# jobs with R = 1, ghz places them (the measured run: the cluster fills from
# empty to full), ghz finishes them. Every call is durable (its change synced
# to the store's write-ahead log) before it returns. Then the same PlaceReduces
# cycles at half the maximum throughput for the latency target. The echo
# server answers grpc.health.v1.Health/Check. Prints a Markdown table; ghz's
# JSON reports go to --out (default a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

slots=1000 conc=16 cycles=5 out="" install=1 hb_nodes=100 hb_policy=fair
while [ $# -gt 0 ]; do
  case "$1" in
    --slots) slots=$2; shift 2 ;;
    --concurrency) conc=$2; shift 2 ;;
    --cycles) cycles=$2; shift 2 ;;
    --heartbeat-nodes) hb_nodes=$2; shift 2 ;;
    --heartbeat-policy) hb_policy=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-install) install=0; shift ;;
    *) echo "loadtest: unknown argument $1" >&2; exit 2 ;;
  esac
done
scripts/setup.sh
for t in jq curl; do
  command -v $t >/dev/null || { echo "loadtest: needs $t (apt-get install $t)" >&2; exit 1; }
done

tools=$(go env GOPATH)/bin
for t in ghz grpcurl; do
  [ -x "$tools/$t" ] && continue
  if [ "$install" = 0 ]; then echo "loadtest: $t is not installed in $tools" >&2; exit 3; fi
  case $t in
    ghz) go install github.com/bojand/ghz/cmd/ghz@v0.120.0 ;;
    grpcurl) go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3 ;;
  esac
done
ghz="$tools/ghz" grpcurl="$tools/grpcurl"

work=$(mktemp -d)
[ -n "$out" ] || out=$(mktemp -d -t optd-loadtest-reports.XXXXXX)
mkdir -p "$out"
go build -o "$work/optd" ./cmd/optd
go build -o "$work/echo" ./benchmarks/cmd/echo
optd_addr=127.0.0.1:17543 echo_addr=127.0.0.1:17544 metrics_addr=127.0.0.1:17545
"$work/optd" serve --listen "$optd_addr" --data-dir "$work/data" --metrics-listen "$metrics_addr" 2>"$work/optd.log" &
optd_pid=$!
"$work/echo" --listen "$echo_addr" &
echo_pid=$!
trap 'kill $optd_pid $echo_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do
  "$grpcurl" -plaintext "$optd_addr" grpc.health.v1.Health/Check 2>/dev/null | grep -q SERVING && break
  sleep 0.2
done

# One node per 10 slots (100 nodes for 1000 slots), costs from rack hops.
nodes=$(jq -nc --argjson n $((slots / 10)) '[range($n) | {id: "n\(.)", rack: "r\(. / 20 | floor)", reduce_slots: 10}]')
jq -nc --argjson nodes "$nodes" '{cluster_id: "lt", nodes: $nodes, policy: {name: "receding-horizon"}}' |
  "$grpcurl" -plaintext -d @ "$optd_addr" optd.v1.ClusterService/RegisterCluster >/dev/null

run() { # run NAME ADDR METHOD DATA [ghz args...]: one ghz run, JSON report in $out/NAME.json
  # DATA is the JSON itself, or @FILE.
  local name=$1 addr=$2 method=$3 data=$4; shift 4
  local d=(-d "$data")
  [ "${data#@}" != "$data" ] && d=(-D "${data#@}")
  "$ghz" --insecure --call "$method" "${d[@]}" -c "$conc" --format json -o "$out/$name.json" "$@" "$addr"
}
# The write-ahead log's sync times (optd_store_wal_sync_seconds) around a
# run: the floor of a durable call's latency on this disk.
sync_buckets() { curl -s "http://$metrics_addr/metrics" | awk '/^optd_store_wal_sync_seconds_bucket/ {print}' ; }
sync_quantiles() { # sync_quantiles BEFORE AFTER: "p50 p99 count" of the syncs between (bucket upper bounds, ms)
  paste -d' ' "$1" "$2" | awk '{
      match($1, /le="[^"]*"/); le = substr($1, RSTART + 4, RLENGTH - 5)
      n++; bound[n] = le; count[n] = $4 - $2 }
    END { total = count[n]
      for (q = 1; q <= 2; q++) { p = (q == 1 ? 0.5 : 0.99); for (i = 1; i <= n; i++) if (count[i] >= p * total) { printf "%s ", (bound[i] == "+Inf" ? "inf" : bound[i] * 1000); break } }
      print total }'
}
cycle() { # cycle K [ghz args for PlaceReduces]
  local k=$1; shift
  # Each call's message is one element of a JSON array that ghz sends in
  # turn and encodes once (a {{.RequestNumber}} template would be rendered
  # and encoded per call, on the same two cores as the server).
  jq -nc --argjson n "$slots" --arg k "$k" '[range($n) | {cluster_id: "lt", job_id: "c\($k)-\(.)", maps: 10, reduces: 1}]' >"$work/submit.json"
  jq -nc --argjson n "$slots" --arg k "$k" '[range($n) | {cluster_id: "lt", job_id: "c\($k)-\(.)", data_mb: .}]' >"$work/place.json"
  jq -nc --argjson n "$slots" --arg k "$k" '[range($n) | {cluster_id: "lt", job_id: "c\($k)-\(.)"}]' >"$work/finish.json"
  run "submit-$k" "$optd_addr" optd.v1.ClusterService/SubmitJob "@$work/submit.json" -n "$slots"
  sync_buckets >"$work/sync-before"
  run "place-$k" "$optd_addr" optd.v1.ClusterService/PlaceReduces "@$work/place.json" -n "$slots" "$@"
  sync_buckets >"$work/sync-after"
  sync_quantiles "$work/sync-before" "$work/sync-after" >"$out/place-$k.syncs"
  run "finish-$k" "$optd_addr" optd.v1.ClusterService/JobFinished "@$work/finish.json" -n "$slots"
}
run warmup "$optd_addr" grpc.health.v1.Health/Check '{}' -n 2000 >/dev/null
for k in $(seq "$cycles"); do cycle "max$k"; done
run echo "$echo_addr" grpc.health.v1.Health/Check '{}' -n $((slots * cycles))
run optd-health "$optd_addr" grpc.health.v1.Health/Check '{}' -n $((slots * cycles))

# ghz reports latencies in ns and rps per run; combine the cycles.
stats() { # stats FILE...: "rps p50_ms p99_ms errors"
  jq -s '{count: (map(.count) | add), total: (map(.total) | add),
          p50: (map(.latencyDistribution[] | select(.percentage == 50) | .latency) | max),
          p99: (map(.latencyDistribution[] | select(.percentage == 99) | .latency) | max),
          errors: (map(.statusCodeDistribution | to_entries | map(select(.key != "OK") | .value) | add // 0) | add)} |
         "\(.count / (.total / 1e9)) \(.p50 / 1e6) \(.p99 / 1e6) \(.errors)"' -r "$@"
}
read -r place_rps place_p50 place_p99 place_err < <(stats "$out"/place-max*.json)
read -r echo_rps echo_p50 echo_p99 echo_err < <(stats "$out/echo.json")
read -r health_rps health_p50 health_p99 health_err < <(stats "$out/optd-health.json")
half=$(jq -n "$place_rps / 2 | floor")
for k in $(seq "$cycles"); do cycle "half$k" --rps "$half"; done
read -r half_rps half_p50 half_p99 half_err < <(stats "$out"/place-half*.json)
# Sync quantiles over the half-rate cycles: the worst cycle's (as stats takes
# the worst p99), and the syncs per call.
read -r sync_p50 sync_p99 syncs < <(cat "$out"/place-half*.syncs | awk '{ if ($1 > p50) p50 = $1; if ($2 > p99) p99 = $2; n += $3 } END { print p50, p99, n }')

# Heartbeat: a cluster of $hb_nodes nodes (8 GB and 4 vcores each, 10 racks)
# under the heartbeat policy $hb_policy, with 10 jobs of 400 maps (input
# replicas on 3 nodes) and 40 reduces of 2 GB and 1 vcore. ghz sends the
# nodes' heartbeats round-robin without task reports (ghz cannot know the
# attempt ids the server hands out): the first round fills the nodes (durable
# starts), the rest is a busy cluster's steady state, where the policy looks
# at every pending task and finds the node full.
hb_nodes_json=$(jq -nc --argjson n "$hb_nodes" '[range($n) | {id: "h\(.)", rack: "r\(. % 10)", capacity: {memory_mb: 8192, vcores: 4}}]')
jq -nc --argjson nodes "$hb_nodes_json" --arg spec "$hb_policy" \
  '{cluster_id: "hb", nodes: $nodes, heartbeat: {spec: $spec, resources: ["memory_mb", "vcores"]}}' |
  "$grpcurl" -plaintext -d @ "$optd_addr" optd.v1.ClusterService/RegisterCluster >/dev/null
for j in $(seq 0 9); do
  jq -nc --argjson j "$j" --argjson n "$hb_nodes" '{cluster_id: "hb", job_id: "hj\($j)", maps: 400, reduces: 40,
      map_demand: {memory_mb: 2048, vcores: 1}, reduce_demand: {memory_mb: 2048, vcores: 1},
      stages: [{reduces: 40, maps: [range(400) as $m | {nodes: ["h\(($m * 7 + $j) % $n)", "h\(($m * 13 + $j + 1) % $n)", "h\(($m * 29 + $j + 2) % $n)"]}]}]}' |
    "$grpcurl" -plaintext -d @ "$optd_addr" optd.v1.ClusterService/SubmitJob >/dev/null
done
beats=$(jq -nc --argjson n "$hb_nodes" '[range($n) | {cluster_id: "hb", node_id: "h\(.)"}]')
run heartbeat-max "$optd_addr" optd.v1.ClusterService/Heartbeat "$beats" -n $((slots * cycles))
read -r hb_rps hb_p50 hb_p99 hb_err < <(stats "$out/heartbeat-max.json")
hb_half=$(jq -n "$hb_rps / 2 | floor")
run heartbeat-half "$optd_addr" optd.v1.ClusterService/Heartbeat "$beats" -n $((slots * cycles)) --rps "$hb_half"
read -r hbh_rps hbh_p50 hbh_p99 hbh_err < <(stats "$out/heartbeat-half.json")
# The echo server at the same two rates: the latency floor of this machine
# (ghz and the server share its cores) beside which the p99 targets read.
run echo-place-half "$echo_addr" grpc.health.v1.Health/Check '{}' -n $((slots * cycles)) --rps "$half"
read -r eph_rps eph_p50 eph_p99 eph_err < <(stats "$out/echo-place-half.json")
run echo-hb-half "$echo_addr" grpc.health.v1.Health/Check '{}' -n $((slots * cycles)) --rps "$hb_half"
read -r ehh_rps ehh_p50 ehh_p99 ehh_err < <(stats "$out/echo-hb-half.json")

printf '| run (concurrency %s, %s slots) | calls/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|\n' "$conc" "$slots"
printf '| echo server Health/Check | %.0f | %.3f | %.3f | %s |\n' "$echo_rps" "$echo_p50" "$echo_p99" "$echo_err"
printf '| optd Health/Check | %.0f | %.3f | %.3f | %s |\n' "$health_rps" "$health_p50" "$health_p99" "$health_err"
printf '| optd PlaceReduces, max rate | %.0f | %.3f | %.3f | %s |\n' "$place_rps" "$place_p50" "$place_p99" "$place_err"
printf '| optd PlaceReduces at %s/s (half the max) | %.0f | %.3f | %.3f | %s |\n' "$half" "$half_rps" "$half_p50" "$half_p99" "$half_err"
printf '| echo server at %s/s | %.0f | %.3f | %.3f | %s |\n' "$half" "$eph_rps" "$eph_p50" "$eph_p99" "$eph_err"
printf '| optd Heartbeat (%s nodes, %s), max rate | %.0f | %.3f | %.3f | %s |\n' "$hb_nodes" "$hb_policy" "$hb_rps" "$hb_p50" "$hb_p99" "$hb_err"
printf '| optd Heartbeat at %s/s (half the max) | %.0f | %.3f | %.3f | %s |\n' "$hb_half" "$hbh_rps" "$hbh_p50" "$hbh_p99" "$hbh_err"
printf '| echo server at %s/s | %.0f | %.3f | %.3f | %s |\n' "$hb_half" "$ehh_rps" "$ehh_p50" "$ehh_p99" "$ehh_err"
printf '\nThroughput / echo throughput: PlaceReduces %.2f, Heartbeat %.2f. ghz reports: %s\n' \
  "$(jq -n "$place_rps / $echo_rps")" "$(jq -n "$hb_rps / $echo_rps")" "$out"
printf '\nWrite-ahead log syncs during PlaceReduces at half the max: %s for %s calls, p50 ≤ %s ms, p99 ≤ %s ms (bucket bounds of optd_store_wal_sync_seconds, worst cycle).\n' \
  "$syncs" "$((slots * cycles))" "$sync_p50" "$sync_p99"
