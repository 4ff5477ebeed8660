# Sourced by scripts/conformance: one node at a time, podvisor or the real kubelet, on a
# containerd 2.1 of its own (a kubelet garbage-collects sandboxes it does not know, so the
# two never share one), holding the suite's images, joined to the control plane with the
# bootstrap kubeconfig, and the only Node the cluster has while the suite runs.
# Uses: $e2e $k8s $images $report $admin $bootstrap $cluster_dir $node_ip $podvisor_bin
#       $procs $focus_re $skip_re, and kc (kubectl as admin).

node_name() { echo "conformance-$1"; }

node_containerd() { # KIND: sets $sock, with the images imported and pinned
  export PODVISOR_CONTAINERD_VERSION=2.1
  export PODVISOR_CONTAINERD_DIR=/var/lib/podvisor-conformance-containerd-$1
  sock=$(scripts/containerd-up | tail -n 1)
  local ctr=${PODVISOR_TOOLS:-/var/lib/podvisor-tools}/containerd-2.1/usr/bin/ctr
  local have name tarball
  have=$("$ctr" -a "$sock" -n k8s.io images ls -q)
  while IFS=$'\t' read -r name tarball _; do
    if ! grep -qx "$name" <<<"$have"; then
      "$ctr" -a "$sock" -n k8s.io images import "$tarball" >/dev/null
    fi
    # Pinned, so no image garbage collection removes one mid-run.
    "$ctr" -a "$sock" -n k8s.io images label "$name" io.cri-containerd.pinned=pinned >/dev/null
  done <"$images/images.txt"
}

# The nodes' eviction settings: off on both unless a caller (scripts/lib/eviction-compare.sh)
# sets them, and then the same thresholds on both.
node_eviction_podvisor=${node_eviction_podvisor:-'hard = { "nodefs.available" = "0%", "imagefs.available" = "0%", "memory.available" = "0%" }'}
node_eviction_kubelet=${node_eviction_kubelet:-'evictionHard: {nodefs.available: "0%", imagefs.available: "0%", memory.available: "0%"}'}
# With node_small_fs=SIZE, the node's filesystem (the kubelet's root directory, the
# directory of podvisor's pods) is an ext4 of SIZE of its own, on a loop device.
node_small_fs=${node_small_fs:-}

small_fs() { # DIR
  [ -n "$node_small_fs" ] || return 0
  mkdir -p "$1"
  truncate -s "$node_small_fs" "$1.img"
  mkfs.ext4 -q -F "$1.img"
  mount -o loop "$1.img" "$1"
}

node_start_podvisor() { # DIR NAME
  local dir=$1 name=$2
  mkdir -p "$dir"/{manifests,state,logs}
  small_fs "$dir/state/pods"
  cat >"$dir/podvisor.toml" <<EOF
node_name = "$name"
runtime_endpoint = "unix://$sock"
manifest_dir = "$dir/manifests"
state_dir = "$dir/state"
pod_log_dir = "$dir/logs"
[debug]
address = "127.0.0.1:0"
[api]
address = "127.0.0.1:0"
[server]
address = "0.0.0.0:10250"
[log]
filter = "info"
[cluster]
kubeconfig = "$bootstrap"
# As the kubelet beside it is configured (node_start_kubelet).
[eviction]
$node_eviction_podvisor
[image_gc]
high_threshold_percent = 100
low_threshold_percent = 99
EOF
  setsid "$podvisor_bin" run --config "$dir/podvisor.toml" >"$dir/node.log" 2>&1 </dev/null &
  echo $! >"$dir/node.pid"
}

node_start_kubelet() { # DIR NAME
  local dir=$1 name=$2
  mkdir -p "$dir"
  small_fs "$dir/root"
  # As node-bench starts it: this machine has cgroup v1 and no systemd (no QoS cgroups, v1
  # allowed); eviction and image GC thresholds off, on both nodes, so how full CI's disk
  # is decides nothing (the nodes' own containerds hold the suite's images, pinned).
  # Everything else is the kubelet's default.
  cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: $cluster_dir/pki/ca.crt}}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
readOnlyPort: 0
$node_eviction_kubelet
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
containerRuntimeEndpoint: unix://$sock
imageServiceEndpoint: unix://$sock
EOF
  setsid "$k8s/kubelet" --config "$dir/kubelet.yaml" --root-dir "$dir/root" --cert-dir "$dir/pki" \
    --bootstrap-kubeconfig "$bootstrap" --kubeconfig "$dir/kubelet.kubeconfig" \
    --hostname-override "$name" --node-ip "$node_ip" >"$dir/node.log" 2>&1 </dev/null &
  echo $! >"$dir/node.pid"
}

umount_under() { # DIR: every mount below it, deepest first
  [ -d "$1" ] || return 0
  awk -v d="$(realpath "$1")/" 'index($2, d) == 1 {print $2}' /proc/mounts |
    sort -r | xargs -r -n1 umount -l
}

node_up() { # KIND
  local kind=$1 name dir
  name=$(node_name "$kind")
  dir=$report/$kind-node
  # An interrupted run leaves its pods' volume mounts (tmpfs, binds) under the directory.
  umount_under "$dir"
  rm -rf "$dir" "${report:?}/$kind"
  # The node under test is the cluster's only one; the Leases of nodes gone (a node
  # stopped after its Node was deleted leaves one no Node owns) go too: the suite checks
  # that every Lease has its Node as owner.
  kc delete nodes --all --wait=false >/dev/null 2>&1 || true
  kc delete leases -n kube-node-lease --all --wait=false >/dev/null 2>&1 || true
  node_containerd "$kind"
  "node_start_$kind" "$dir" "$name"
  local i
  for i in $(seq 1 120); do
    kc get node "$name" >/dev/null 2>&1 && break
    kill -0 "$(cat "$dir/node.pid")" 2>/dev/null || { tail -n 30 "$dir/node.log" >&2; return 1; }
    sleep 1
  done
  kc wait --for=condition=Ready "node/$name" --timeout=120s >&2
}

run_suite() { # KIND
  local kind=$1
  mkdir -p "$report/$kind"
  "$e2e/ginkgo" --procs="$procs" --focus="$focus_re" --skip="$skip_re" --timeout=6h \
    --no-color --output-interceptor-mode=none \
    "$e2e/e2e.test" -- --provider=skeleton --kubeconfig="$admin" \
    --kubectl-path="$e2e/kubectl" --report-dir="$report/$kind" --disable-log-dump \
    --allowed-not-ready-nodes=0 >"$report/$kind/ginkgo.log" 2>&1
}

node_down() { # KIND
  local kind=$1 name dir pid
  name=$(node_name "$kind")
  dir=$report/$kind-node
  pid=$(cat "$dir/node.pid" 2>/dev/null || true)
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  kc delete node "$name" --wait=false >/dev/null 2>&1 || true
  # What a node mounts outlives it: the kubelet's root bound onto itself, podvisor's
  # tmpfs of the cluster's objects, and both nodes' last pods' volumes (token tmpfs).
  umount_under "$dir"
  scripts/containerd-down >/dev/null
}
