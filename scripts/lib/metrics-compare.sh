# Sourced by scripts/conformance --metrics: on the node up now (podvisor or the kubelet), one
# pod of two containers, one writing 8 MiB to an emptyDir, then what monitoring reads of
# the node, as the API server's client reads it (its kubelet-client certificate):
# /metrics/cadvisor, /metrics/resource and /stats/summary, saved under
# $report/$kind/metrics/ for scripts/lib/metrics-compare.py.
# Uses: $report $cluster_dir $node_ip, kc and node_name.

metrics_pod() { # NODE
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  nodeName: $1
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 0
  containers:
  - name: writer
    image: registry.k8s.io/e2e-test-images/busybox:1.37.0-2
    command: [sh, -c, "dd if=/dev/zero of=/data/blob bs=1M count=8; echo written; exec sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  - name: idle
    image: registry.k8s.io/e2e-test-images/busybox:1.37.0-2
    command: [sleep, "3600"]
  volumes: [{name: data, emptyDir: {}}]
EOF
}

metrics_scrape() { # KIND
  local kind=$1 ns=metrics-compare out=$report/$1/metrics pki=$cluster_dir/pki path
  mkdir -p "$out"
  kc create namespace "$ns" >/dev/null 2>&1 || true
  metrics_pod "$(node_name "$kind")" | kc apply -n "$ns" -f - >/dev/null
  kc wait -n "$ns" --for=condition=Ready pod/writer --timeout=120s >&2
  # Both agents sample every 10 s, and a rate needs two samples.
  sleep 25
  for path in /metrics/cadvisor /metrics/resource /stats/summary; do
    curl -fsSk --max-time 30 --cert "$pki/apiserver-kubelet-client.crt" \
      --key "$pki/apiserver-kubelet-client.key" "https://$node_ip:10250$path" \
      >"$out/$(basename "$path")"
  done
  kc delete namespace "$ns" --wait=true --timeout=120s >/dev/null 2>&1 || true
}
