"""volumes-bench: what ConfigMap and Secret volumes cost a pod's start, through a real client
(the Python `kubernetes` package) against podvisor's own API, side by side in one run:
  - create → Running with no volume (the service-account token turned off), with the token
    only (what every standalone pod gets), and with 5 more (3 ConfigMaps, 2 Secrets, one
    envFrom), one at a time and N at once;
  - the agent's RSS with 1,000 ConfigMaps and Secrets stored (500 each, 1 KiB of data).

VOLUMES_BENCH_SCALE (default 1) divides every count: 25 gives the smoke run CI makes.
Run it with crates/podvisor-bench/volumes-bench, which starts an agent of its own.
"""

import os
import subprocess
import sys
import threading
import time

from kubernetes import client, config, watch

from benchlib import row as table_row, rss_mib, scale

state_dir, pid, sock, node = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
config.load_kube_config(config_file=os.path.join(state_dir, "kubeconfig"))
core = client.CoreV1Api()
IMAGE = "localhost/podvisor/busybox:test"
SCALE = scale("VOLUMES_BENCH_SCALE")


def n(count):
    return max(2, count // SCALE)


def rss():
    return rss_mib(pid)


def objects():
    for i in range(3):
        core.create_namespaced_config_map("default", client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=f"cm-{i}"), data={"k": "v" * 100, "K": "x"}))
    for i in range(2):
        core.create_namespaced_secret("default", client.V1Secret(
            metadata=client.V1ObjectMeta(name=f"s-{i}"), string_data={"k": "secret"}))


def pod(name, volumes, token):
    spec = {"terminationGracePeriodSeconds": 0, "automountServiceAccountToken": token, "containers": [{
        "name": "main", "image": IMAGE, "command": ["/bin/sh", "-c", "sleep 3600"]}]}
    if volumes:
        spec["volumes"] = [{"name": f"cm{i}", "configMap": {"name": f"cm-{i}"}} for i in range(3)] + \
            [{"name": f"s{i}", "secret": {"secretName": f"s-{i}"}} for i in range(2)]
        spec["containers"][0]["volumeMounts"] = [{"name": v["name"], "mountPath": f"/v/{v['name']}"}
                                                 for v in spec["volumes"]]
        spec["containers"][0]["envFrom"] = [{"configMapRef": {"name": "cm-0"}}]
    return {"metadata": {"name": name}, "spec": spec}


def wait_running(names, timeout=300):
    left, seen = set(names), {}
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, "default", timeout_seconds=timeout):
        o = ev["object"]
        if o.metadata.name in left and o.status and o.status.phase == "Running":
            seen[o.metadata.name] = time.perf_counter()
            left.discard(o.metadata.name)
            if not left:
                w.stop()
    return seen


def owned_containers():
    out = subprocess.run(["ctr", "--address", sock, "-n", "k8s.io", "containers", "ls", "-q",
                          f'labels."podvisor.io/managed-by"=={node}'], capture_output=True, text=True)
    return out.stdout.split()


def delete_all():
    """Every pod gone from the API and from the runtime: a round never competes with the
    teardown of the one before."""
    for p in core.list_namespaced_pod("default").items:
        core.delete_namespaced_pod(p.metadata.name, "default", grace_period_seconds=0)
    deadline = time.time() + 120
    while (core.list_namespaced_pod("default").items or owned_containers()) and time.time() < deadline:
        time.sleep(0.2)


def one_at_a_time(variant, count):
    tag, volumes, token = variant
    out = []
    for i in range(count):
        name = f"one-{tag}-{i}"
        t0 = time.perf_counter()
        core.create_namespaced_pod("default", pod(name, volumes, token))
        out.append(wait_running([name])[name] - t0)
    delete_all()
    return out


def at_once(variant, count):
    tag, volumes, token = variant
    names = [f"many-{tag}-{i}" for i in range(count)]
    done = {}
    t = threading.Thread(target=lambda: done.update(wait_running(names)))
    t.start()
    time.sleep(0.5)
    t0 = time.perf_counter()
    for name in names:
        core.create_namespaced_pod("default", pod(name, volumes, token))
    t.join()
    delete_all()
    return [done[name] - t0 for name in names]


def row(name, v):
    table_row(name, v, digits=0)


objects()
print("| create → Running | pods | p50 ms | p99 ms |\n|---|---:|---:|---:|")
# The service-account token (a projected volume: a tmpfs, a signed token, the CA, the
# namespace) is every standalone pod's unless it opts out.
VARIANTS = [("bare", False, False), ("token", False, True), ("five", True, True)]
LABELS = {"bare": "no volume (token off)", "token": "the token only (default)",
          "five": "5 volumes and the token"}
for v in VARIANTS:
    row(f"{LABELS[v[0]]}, one at a time", one_at_a_time(v, n(20)))
for v in VARIANTS:
    row(f"{LABELS[v[0]]}, {n(50)} at once", at_once(v, n(50)))

r0 = rss()
for i in range(n(500)):
    core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=f"bulk-{i}"), data={"k": "c" * 1024}))
    core.create_namespaced_secret("default", client.V1Secret(
        metadata=client.V1ObjectMeta(name=f"bulk-{i}"), string_data={"k": "s" * 1024}))
time.sleep(2)
r1 = rss()
print(f"\nagent RSS: {r0:.1f} MiB before, {r1:.1f} MiB with {2 * n(500)} ConfigMaps and Secrets stored (+{r1 - r0:.1f} MiB)")
