#!/usr/bin/env python3
"""Runs the workspace's test binaries in lanes: what `cargo test --workspace` runs one
binary after another, two (or --lanes N) at a time, so one binary's slow tail (a test
waiting out a grace period, a backoff, a control plane) no longer holds the next back.

Built once with `cargo test --no-run`; each binary then runs in its package's directory,
as cargo runs it. Binaries that take the shared runtime away from everyone (they stop
containerd) or need to be its only client run alone first. Each binary's output is
printed whole when it ends, with its time; a summary of every binary's time (longest
first) closes the run. Exits non-zero when any binary failed or could not start, naming
each, as `cargo test --no-fail-fast` does.

Usage: test-lanes.py [--lanes N] [-- CARGO_ARGS...]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

# Stop the shared containerd (cri_reconnect, pleg_restart, runtime_outages) or the whole
# control plane (cluster_outage), or must be containerd's only event subscriber
# (pleg_events): alone, before the lanes start.
ALONE = {"cri_reconnect", "pleg_restart", "runtime_outages", "pleg_events", "cluster_outage"}

# Known long binaries first, so the lanes end together (longest processing time first, by
# their times in CI); the rest in cargo's order.
LONG_FIRST = [
    "deployments",
    "packaging",
    "replicaset",
    "cluster_node",
    "taints",
    "agent_pods",
    "runtime_faults",
    "cluster_silent_node",
    "api_durability",
    "jobs",
    "hostile_input",
    "image_gc",
    "eviction",
    "pod_spec_fields",
    "subpath",
    "cluster_pressure",
    "chaos",
    "kubectl_exec",
    "kubectl_pods",
    "hostile_streams",
    "cluster_streams",
    "hostile_tenants",
    "lifecycle",
]


def build(cargo_args):
    """Builds every test binary; their (package, target, kind, command, directory)."""
    cmd = ["cargo", "test", "--workspace", "--all-features", "--no-run",
           "--message-format=json-render-diagnostics", *cargo_args]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True).stdout
    found = []
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg["profile"]["test"]:
            continue
        target = msg["target"]
        package = msg["package_id"]
        directory = os.path.dirname(msg["manifest_path"])
        found.append((package, target["name"], target["kind"][0], [msg["executable"]], directory))
    # The libraries' documentation examples, which no binary holds: rustdoc builds and runs
    # them (it needs the build directory, which no other cargo holds meanwhile).
    doc = ["cargo", "test", "--workspace", "--all-features", "--doc", *cargo_args]
    found.append(("workspace", "doc-tests", "doc", doc, os.getcwd()))
    return found


def run(binary, log):
    package, name, kind, command, directory = binary
    t0 = time.monotonic()
    with open(log, "w") as out:
        try:
            code = subprocess.run(command, cwd=directory, stdout=out,
                                  stderr=subprocess.STDOUT).returncode
        except OSError as e:
            out.write(f"cannot start {command[0]}: {e}\n")
            code = 127
    took = time.monotonic() - t0
    with open(log) as f:
        text = f.read()
    label = f"{name} ({kind}, {os.path.basename(directory)})"
    verdict = "ok" if code == 0 else f"FAILED (exit {code})"
    sys.stdout.write(f"\n=== test-lanes: {label}: {verdict} in {took:.1f} s\n{text}")
    sys.stdout.flush()
    return label, code, took


def order(binaries):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    return sorted(binaries, key=lambda b: rank.get(b[1], len(rank)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lanes", type=int, default=2)
    parser.add_argument("cargo_args", nargs="*")
    args = parser.parse_args()
    binaries = build(args.cargo_args)
    alone = [b for b in binaries if b[1] in ALONE]
    rest = order([b for b in binaries if b[1] not in ALONE])
    print(f"test-lanes: {len(binaries)} test binaries: {len(alone)} alone, "
          f"then {len(rest)} in {args.lanes} lanes", flush=True)
    t0 = time.monotonic()
    results = []
    with tempfile.TemporaryDirectory(prefix="podvisor-test-lanes-") as logs:
        def one(i_b):
            i, b = i_b
            return run(b, os.path.join(logs, f"{i}.log"))

        results += [one(x) for x in enumerate(alone)]
        with ThreadPoolExecutor(max_workers=args.lanes) as pool:
            results += list(pool.map(one, enumerate(rest, start=len(alone))))
    print(f"\n=== test-lanes: {len(results)} binaries in {time.monotonic() - t0:.0f} s; "
          "each binary's time, longest first:")
    for label, code, took in sorted(results, key=lambda r: -r[2]):
        print(f"  {took:7.1f} s  {'ok' if code == 0 else 'FAILED'}  {label}")
    failed = [label for label, code, _ in results if code != 0]
    if failed:
        print(f"\ntest-lanes: {len(failed)} binaries failed:", *failed, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
