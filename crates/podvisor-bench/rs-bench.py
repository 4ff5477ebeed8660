"""rs-bench: a ReplicaSet scaled 0 → N against N manifests written at once, side by side in
one run, on a release agent of its own (crates/podvisor-bench/rs-bench starts it):
  - wall time from the request (the scale, or the last manifest's rename) until every pod is
    Running, as a watch through the API sees it;
  - the agent's CPU during it (/proc/PID/stat), and the ReplicaSet controller's own figures
    from the debug endpoint: messages handled, syncs, pods created.
Rounds alternate (files, ReplicaSet, files, ReplicaSet).

Usage: python3 rs-bench.py <state_dir> <manifest_dir> <agent pid> <debug endpoint> <node> [N] [rounds]
"""

import json
import os
import sys
import threading
import time
import urllib.request

from kubernetes import client, config, watch

state_dir, manifest_dir, pid, debug, node = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
N = int(sys.argv[6]) if len(sys.argv) > 6 else 100
ROUNDS = int(sys.argv[7]) if len(sys.argv) > 7 else 2
config.load_kube_config(config_file=os.path.join(state_dir, "kubeconfig"))
core, apps = client.CoreV1Api(), client.AppsV1Api()
token = open(os.path.join(state_dir, "pki", "token")).read().strip()
IMAGE = "localhost/podvisor/busybox:test"
COMMAND = ["/bin/sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def controller():
    """Messages handled, time spent handling them (ms), and the controller's summary."""
    req = urllib.request.Request(f"{debug}/debug/actors/replicaset-controller", headers={"Authorization": f"Bearer {token}"})
    a = json.load(urllib.request.urlopen(req))
    t = a["mailbox"]["handle_time"]
    return a["mailbox"]["handled"], t["count"] * t["mean_us"] / 1000, a["state"]


def until_running(prefix, n, started):
    """Seconds from `started` until n pods named `prefix...` are Running."""
    running, w = set(), watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, "default", timeout_seconds=600):
        p = ev["object"]
        name = p.metadata.name
        if name.startswith(prefix) and p.status and p.status.phase == "Running" and p.metadata.deletion_timestamp is None:
            running.add(name)
        if len(running) >= n:
            w.stop()
            return time.time() - started
    raise RuntimeError(f"only {len(running)} of {n} ran")


def until_gone(prefix):
    while any(p.metadata.name.startswith(prefix) for p in core.list_namespaced_pod("default").items):
        time.sleep(0.5)


def files(r):
    prefix = f"file{r}-"
    for i in range(N):
        path = os.path.join(manifest_dir, f"{prefix}{i}.yaml")
        with open(path + ".tmp", "w") as f:
            f.write(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {prefix}{i}}}\nspec:\n  terminationGracePeriodSeconds: 2\n"
                    f"  containers:\n  - {{name: main, image: {IMAGE}, command: {json.dumps(COMMAND)}}}\n")
    c0, t0 = cpu_s(), time.time()
    for i in range(N):
        path = os.path.join(manifest_dir, f"{prefix}{i}.yaml")
        os.rename(path + ".tmp", path)
    took = until_running(prefix, N, t0)
    used = cpu_s() - c0
    for i in range(N):
        os.remove(os.path.join(manifest_dir, f"{prefix}{i}.yaml"))
    until_gone(prefix)
    return took, used


def replicaset(r):
    name = f"rs{r}"
    body = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"terminationGracePeriodSeconds": 2,
                                           "containers": [{"name": "main", "image": IMAGE, "command": COMMAND}]}}}}
    apps.create_namespaced_replica_set("default", body)
    time.sleep(1)
    handled0, busy0, s0 = controller()
    c0, t0 = cpu_s(), time.time()
    apps.patch_namespaced_replica_set_scale(name, "default", {"spec": {"replicas": N}})
    took = until_running(f"{name}-", N, t0)
    used = cpu_s() - c0
    handled1, busy1, s1 = controller()
    apps.delete_namespaced_replica_set(name, "default")
    until_gone(f"{name}-")
    return took, used, (handled1 - handled0, busy1 - busy0, s1["syncs"] - s0["syncs"], s1["created"] - s0["created"])


rows = []
for r in range(ROUNDS):
    ft, fc = files(r)
    rt, rc, (handled, busy, syncs, created) = replicaset(r)
    rows.append((ft, fc, rt, rc))
    print(f"round {r}: files {ft:.2f} s ({fc:.2f} s CPU); ReplicaSet {rt:.2f} s ({rc:.2f} s CPU); "
          f"the controller handled {handled} messages in {busy:.1f} ms, ran {syncs} syncs "
          f"({syncs / rt:.1f}/s) and created {created} pods", flush=True)

print(f"\n| {N} pods | round | until all Running s | agent CPU s |\n|---|---:|---:|---:|")
for r, (ft, fc, rt, rc) in enumerate(rows):
    print(f"| manifest files written at once | {r} | {ft:.2f} | {fc:.2f} |")
    print(f"| ReplicaSet scaled 0 → {N} | {r} | {rt:.2f} | {rc:.2f} |")
