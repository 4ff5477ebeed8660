"""api-bench: podvisor's Kubernetes API through a real client (the Python `kubernetes`
package, keep-alive HTTPS), side by side in one run:
  - create / get / list latency with 1,000 stored pods (bound to another node, so nothing
    runs), RSS of the agent before and after storing them;
  - 50 concurrent watchers: time from a create request to each watcher's event;
  - a status write (the status subresource, as the node's status writer writes) → the
    event a watcher of that pod sees;
  - create → Running through the API against the manifest directory path (10 pods each).

API_BENCH_SCALE (default 1) divides every count: 100 gives the smoke run CI makes so the
program never rots (figures not judged).

Run it with crates/podvisor-bench/api-bench, which starts an agent of its own; by hand
(an agent running with its own state dir and manifest dir):
  python3 crates/podvisor-bench/api-bench.py <state_dir> <manifest_dir> <agent pid> <node name>
"""

import os
import sys
import threading
import time

from kubernetes import client, config, watch

from benchlib import row, rss_mib, scale

state_dir, manifest_dir, pid, node = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
config.load_kube_config(config_file=os.path.join(state_dir, "kubeconfig"))
core = client.CoreV1Api()
IMAGE = "localhost/podvisor/busybox:test"
SCALE = scale("API_BENCH_SCALE")


def n(count):
    return max(2, count // SCALE)


def rss():
    return rss_mib(pid)


def pod(name, node_name, sample=False):
    return {"metadata": {"name": name, "labels": {"app": "web", "sample": "yes" if sample else "no"}},
            "spec": {"nodeName": node_name, "containers": [{"name": "main", "image": IMAGE,
                     "command": ["/bin/sh", "-c", "sleep 3600"], "env": [{"name": "A", "value": "1"}]}]}}


def timed(f, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return out


def store_figures():
    time.sleep(2)
    r0 = rss()
    creates = []
    for i in range(n(1000)):
        body = pod(f"p-{i:05d}", "elsewhere", i < n(110))
        creates.append(timed(lambda: core.create_namespaced_pod("default", body), 1)[0])
    time.sleep(2)
    r1 = rss()
    row("create pod (durable)", creates)
    row("get pod", timed(lambda: core.read_namespaced_pod("p-00001", "default", _preload_content=False).data, n(200)))
    row(f"list {n(110)} pods (label selector)", timed(lambda: core.list_namespaced_pod("default", label_selector="sample=yes", _preload_content=False).data, n(50)))
    row(f"list {n(1000)} pods", timed(lambda: core.list_namespaced_pod("default", _preload_content=False).data, n(50)))
    return r0, r1


def watchers(n=n(50), creates=n(20)):
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    acked, lat, ready = {}, [], threading.Barrier(n + 1)
    lock = threading.Lock()

    def follow():
        api = client.CoreV1Api(client.ApiClient())
        stream = watch.Watch().stream(api.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=30)
        ready.wait()
        seen = 0
        for ev in stream:
            now = time.perf_counter()
            name = ev["object"].metadata.name
            while name not in acked:
                time.sleep(0.0005)
            with lock:
                lat.append(now - acked[name])
            seen += 1
            if seen == creates:
                return

    threads = [threading.Thread(target=follow) for _ in range(n)]
    for t in threads:
        t.start()
    ready.wait()
    time.sleep(1)
    for i in range(creates):
        name = f"w-{i:03d}"
        t0 = time.perf_counter()
        core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name)))
        acked[name] = t0
        time.sleep(0.05)
    for t in threads:
        t.join()
    row(f"create → event, {n} watchers ({creates} creates)", lat)


def running(name, timeout=60):
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, "default", field_selector=f"metadata.name={name}", timeout_seconds=timeout):
        if ev["object"].status and ev["object"].status.phase == "Running":
            w.stop()
            return


def status_writes(count=n(50)):
    """A status written through the status subresource → the watcher of that pod sees it."""
    name = "p-00000"
    lat = []
    for i in range(count):
        current = core.read_namespaced_pod(name, "default")
        rv = current.metadata.resource_version
        w = watch.Watch()
        stream = w.stream(core.list_namespaced_pod, "default", field_selector=f"metadata.name={name}",
                          resource_version=rv, timeout_seconds=10)
        current.status = client.V1PodStatus(phase="Pending", message=f"write {i}")
        t0 = time.perf_counter()
        core.replace_namespaced_pod_status(name, "default", current)
        for ev in stream:
            if ev["object"].status and ev["object"].status.message == f"write {i}":
                lat.append(time.perf_counter() - t0)
                w.stop()
                break
    row("status write → watch event", lat)


def start_paths(n=n(10)):
    api, files = [], []
    for i in range(n):
        name = f"run-api-{i}"
        t0 = time.perf_counter()
        core.create_namespaced_pod("default", pod(name, node))
        running(name)
        api.append(time.perf_counter() - t0)
        core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
        path = os.path.join(manifest_dir, f"run-file-{i}.yaml")
        t0 = time.perf_counter()
        with open(path + ".tmp", "w") as f:
            f.write(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: run-file-{i}}}\nspec:\n  containers:\n"
                    f"  - {{name: main, image: {IMAGE}, command: [/bin/sh, -c, sleep 3600]}}\n")
        os.rename(path + ".tmp", path)
        running(f"run-file-{i}-{node}")
        files.append(time.perf_counter() - t0)
        os.remove(path)
    row("create → Running (mirror seen Running), manifest file", files)
    row("create → Running, API", api)


print("| what | n | p50 ms | p99 ms |\n|---|---:|---:|---:|")
r0, r1 = store_figures()
watchers()
status_writes()
start_paths()
# The stored pods are bound to a node that does not exist: nobody would finish their graceful
# deletion, so they go at once (the driver then waits only for this node's own pods).
for item in core.list_namespaced_pod("default", field_selector="spec.nodeName=elsewhere").items:
    core.delete_namespaced_pod(item.metadata.name, "default", grace_period_seconds=0)
print(f"\nagent RSS: {r0:.1f} MiB before, {r1:.1f} MiB with {n(1000)} more pods stored (+{r1 - r0:.1f} MiB)")
