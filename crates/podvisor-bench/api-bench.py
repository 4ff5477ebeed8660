import sys, time, statistics, os
from kubernetes import client, config
config.load_kube_config(config_file="/tmp/pv/state/kubeconfig")
core = client.CoreV1Api()
pid = int(sys.argv[1])
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1]) / 1024
def pct(v, q):
    v = sorted(v); return v[min(len(v) - 1, max(0, int(q * len(v) + 0.999) - 1))] * 1000
def body(i, node):
    return {"metadata": {"name": f"p-{i:05d}", "labels": {"app": "web", "sample": "yes" if i < 110 else "no"}},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "localhost/podvisor/busybox:test",
                     "command": ["/bin/sh", "-c", "sleep 3600"], "env": [{"name": "A", "value": "1"}]}]}}
time.sleep(2)
r0 = rss()
creates = []
for i in range(1000):
    t = time.perf_counter(); core.create_namespaced_pod("default", body(i, "elsewhere")); creates.append(time.perf_counter() - t)
time.sleep(2)
r1 = rss()
def timed(f, n=50):
    out = []
    for _ in range(n):
        t = time.perf_counter(); f(); out.append(time.perf_counter() - t)
    return out
get = timed(lambda: core.read_namespaced_pod("p-00500", "default", _preload_content=False).data, 200)
l110 = timed(lambda: core.list_namespaced_pod("default", label_selector="sample=yes", _preload_content=False).data)
l1000 = timed(lambda: core.list_namespaced_pod("default", _preload_content=False).data)
print("| what | n | p50 ms | p99 ms |\n|---|---:|---:|---:|")
for name, v in [("create pod (HTTPS, durable)", creates), ("get pod", get), ("list 110 pods (label selector)", l110), ("list 1,000 pods", l1000)]:
    print(f"| {name} | {len(v)} | {pct(v, .5):.2f} | {pct(v, .99):.2f} |")
print(f"agent RSS: {r0:.1f} MiB idle, {r1:.1f} MiB with 1,000 more pods stored (+{r1 - r0:.1f} MiB)")
