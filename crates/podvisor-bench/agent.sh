# Sourced by api-bench and rs-bench: `start_agent NODE DEBUG_PORT API_PORT [DELETE_KINDS]`
# starts a release podvisor of its own (`$PODVISOR_BIN`, default target/release/podvisor;
# another build, for a side-by-side run) (a fresh state directory with its store, PKI and
# kubeconfig, a manifest directory, its own ports, clear of scripts/cluster-up's 16443 and
# 23790-23801, which CI's control plane holds while the benchmarks run) against the development containerd, sets
# `dir`, `node`, `pid` and the test tools' variables, and cleans everything up on exit.

start_agent() {
    node=$1
    local debug_port=$2 api_port=$3
    delete_kinds=${4:-pods}
    sock=$(scripts/containerd-up | tail -n 1)
    eval "$(scripts/test-deps | sed 's/^/export /')"
    dir=$(mktemp -d "/var/tmp/podvisor-$node.XXXXXX")
    mkdir -p "$dir/manifests" "$dir/state" "$dir/logs"
    cat >"$dir/podvisor.toml" <<EOT
node_name = "$node"
runtime_endpoint = "unix://$sock"
manifest_dir = "$dir/manifests"
state_dir = "$dir/state"
pod_log_dir = "$dir/logs"
[debug]
address = "127.0.0.1:$debug_port"
[api]
address = "127.0.0.1:$api_port"
[server]
address = "127.0.0.1:0"
# Thresholds off, as podvisor_bench::agent::DISK_DECIDES_NOTHING: with the kubelet's
# defaults a host disk 86 % full tainted the node mid-run and the API refused the pods.
[eviction]
hard = { "nodefs.available" = "0%", "imagefs.available" = "0%", "memory.available" = "0%" }
[image_gc]
high_threshold_percent = 100
low_threshold_percent = 99
EOT
    "${PODVISOR_BIN:-target/release/podvisor}" run --config "$dir/podvisor.toml" >"$dir/agent.log" 2>&1 &
    pid=$!
    trap stop_agent EXIT
    # Up to a minute for its API (a debug build on a loaded machine is slow to start); an
    # agent that stops or never serves fails the benchmark with its log, not later with a
    # client's "no configuration found".
    for _ in $(seq 600); do
        [[ -s $dir/state/kubeconfig ]] && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "start_agent: the agent did not serve its API (kubeconfig $dir/state/kubeconfig); its log:" >&2
    tail -n 40 "$dir/agent.log" >&2
    exit 1
}

owned_containers() {
    ctr --address "$sock" -n k8s.io containers ls -q "labels.\"podvisor.io/managed-by\"==$node"
}

stop_agent() {
    rm -f "$dir"/manifests/*
    "$KUBECTL" --kubeconfig "$dir/state/kubeconfig" delete "$delete_kinds" --all --wait=true \
        --timeout=120s >/dev/null 2>&1 || true
    # A pod leaves the API once it is stopped; its sandbox and containers are removed just
    # after. Stopping the agent before that would leave them in containerd for good.
    for _ in $(seq 600); do
        [[ -z $(owned_containers) ]] && break
        sleep 0.1
    done
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
}
