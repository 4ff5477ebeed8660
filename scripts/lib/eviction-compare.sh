# Sourced by scripts/conformance --eviction-only: how long a node takes from crossing a hard
# eviction threshold to the pod's eviction, podvisor's and the kubelet's, each on the same
# control plane and a containerd 2.1 of its own, with the same settings: nodefs.available
# below 24Mi on a 64 MiB ext4 of the node's own (a loop device), a transition period of
# 5 s, everything else the kubelet's default (its 10 s monitoring period, podvisor's too;
# PODVISOR_EVICTION_PERIOD sets podvisor's, which the kubelet cannot).
# Each round a pod bound to the node writes 48 MiB to an emptyDir and prints the host's
# uptime; the harness polls the pod (and its log, for that time) until it is Failed and
# reads the uptime then: each figure is some 0.1-0.3 s late. Rounds
# in $report/$kind/eviction.txt (seconds), the table in $report/eviction-comparison.md.
# Uses: $report, kc and node_name.

eviction_rounds=${PODVISOR_EVICTION_ROUNDS:-5}
export node_small_fs=64M
node_eviction_podvisor="hard = { \"nodefs.available\" = \"24Mi\" }
pressure_transition_period = \"5s\"
monitoring_period = \"${PODVISOR_EVICTION_PERIOD:-10s}\""
node_eviction_kubelet='evictionHard: {nodefs.available: "24Mi"}
evictionPressureTransitionPeriod: 5s'

eviction_pod() { # NODE NAME
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $2}
spec:
  nodeName: $1
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 0
  containers:
  - name: writer
    image: registry.k8s.io/e2e-test-images/busybox:1.37.0-2
    command: [sh, -c, "dd if=/dev/zero of=/data/fill bs=1M count=48 2>/dev/null; cat /proc/uptime; exec sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
EOF
}

uptime_now() { cut -d' ' -f1 /proc/uptime; }

# Waits until the node reports no DiskPressure (at most two minutes).
eviction_clear() { # NODE
  local i
  for i in $(seq 1 240); do
    [ "$(kc get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="DiskPressure")].status}' || true)" = False ] && return 0
    sleep 0.5
  done
  echo "eviction: DiskPressure did not clear on $1" >&2
  return 1
}

eviction_round() { # KIND ROUND NS -> prints the seconds from the write to Failed
  local node pod=writer-$2-$$ ns=$3 phase="" i written evicted
  node=$(node_name "$1")
  # The last round's pressure gone from the node's own view, not only from its Node (the
  # kubelet writes its Node every 10 s): the transition period (5 s) and two monitoring
  # periods past the last round's deletion.
  [ "$2" = 1 ] || sleep 25
  eviction_clear "$node"
  # At a random point of the monitoring period: a round begun just after the pass that saw
  # the pressure clear would always wait most of a period.
  sleep "$((RANDOM % 10)).$((RANDOM % 10))"
  eviction_pod "$node" "$pod" | kc apply -n "$ns" -f - >/dev/null
  # The time the pod wrote is read while it runs: the kubelet removes an evicted pod's
  # containers, and their logs, at once.
  written=
  for i in $(seq 1 1200); do
    phase=$(kc get pod -n "$ns" "$pod" -o 'jsonpath={.status.phase}' 2>/dev/null || true)
    [ "$phase" = Failed ] && break
    if [ -z "$written" ] && [ "$phase" = Running ]; then
      written=$(kc logs -n "$ns" "$pod" 2>/dev/null | awk 'NR == 1 && $1 ~ /^[0-9.]+$/ {print $1}' || true)
    fi
    sleep 0.1
  done
  evicted=$(uptime_now)
  [ "$phase" = Failed ] || { echo "eviction: $pod was not evicted in 2 min" >&2; return 1; }
  [ -n "$written" ] || { echo "eviction: $pod's time of writing was not read" >&2; return 1; }
  kc delete pod -n "$ns" "$pod" --wait=false >/dev/null
  awk -v a="$written" -v b="$evicted" 'BEGIN {printf "%.2f\n", b - a}'
}

eviction_measure() { # KIND
  local kind=$1 ns=eviction-compare out=$report/$1/eviction.txt r
  mkdir -p "$report/$kind"
  : >"$out"
  # A namespace an interrupted run left holds pods of the same names.
  kc delete namespace "$ns" --wait=true --timeout=120s >/dev/null 2>&1 || true
  kc create namespace "$ns" >/dev/null
  for r in $(seq 1 "$eviction_rounds"); do
    eviction_round "$kind" "$r" "$ns" >>"$out"
    echo "eviction: $kind round $r: $(tail -n 1 "$out") s" >&2
  done
  kc delete namespace "$ns" --wait=true --timeout=120s >/dev/null 2>&1 || true
}

eviction_table() { # -> markdown
  local kind
  echo "| node | rounds | p50 (s) | max (s) | each (s) |"
  echo "|---|---|---|---|---|"
  for kind in podvisor kubelet; do
    [ -f "$report/$kind/eviction.txt" ] || continue
    sort -n "$report/$kind/eviction.txt" | awk -v k="$kind" '
      { v[NR] = $1; all = all (NR > 1 ? ", " : "") $1 }
      END { printf "| %s | %d | %.2f | %.2f | %s |\n", k, NR, v[int((NR + 1) / 2)], v[NR], all }'
  done
}
