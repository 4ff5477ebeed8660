#!/usr/bin/env python3
"""Compares what monitoring reads of a podvisor node with what it reads of the kubelet, for
the same pod (scripts/lib/metrics-compare.sh saved both): for /metrics/cadvisor and
/metrics/resource, each sample name the kubelet gives for the pod (and the node), with its
label names on each side; for /stats/summary, each field the kubelet fills for the node,
the pod and its containers. Prints the comparison as Markdown (and writes it to DOC when
given); exits 1 when a sample podvisor claims to serve (CLAIMED) is missing or carries
other label names than the kubelet's.

usage: metrics-compare.py REPORT_DIR [DOC]
"""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

# What podvisor serves, which must be named and labelled as the kubelet's.
CLAIMED = {
    "container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
    "container_memory_usage_bytes", "container_memory_rss", "container_start_time_seconds",
    "container_last_seen", "container_network_receive_bytes_total",
    "container_network_receive_errors_total", "container_network_transmit_bytes_total",
    "container_network_transmit_errors_total", "machine_cpu_cores", "machine_memory_bytes",
    "pod_cpu_usage_seconds_total", "pod_memory_working_set_bytes",
    "node_cpu_usage_seconds_total", "node_memory_working_set_bytes", "resource_scrape_error",
}


def samples(path):
    """sample name -> set of sorted label-name tuples, for the pod's series and the node's."""
    with open(path) as f:
        text = f.read()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.labels.get("pod", "writer") not in ("writer", ""):
                continue
            out.setdefault(s.name, set()).add(tuple(sorted(s.labels)))
    return out


def leaves(v, prefix=""):
    """Every leaf field path of a JSON value (list items as [])."""
    if isinstance(v, dict) and v:
        return set().union(*(leaves(x, f"{prefix}.{k}" if prefix else k) for k, x in v.items()))
    if isinstance(v, list) and v:
        return set().union(*(leaves(x, prefix + "[]") for x in v))
    return {prefix}


def summary_fields(path):
    with open(path) as f:
        s = json.load(f)
    pods = [p for p in s.get("pods", []) if p["podRef"]["name"] == "writer"]
    node = {k: v for k, v in s["node"].items() if k != "systemContainers"}
    return leaves({"node": node, "pod": pods[0] if pods else {}})


def verdict(kubelet, podvisor):
    if not kubelet:
        return "podvisor only"
    if not podvisor:
        return "missing"
    if podvisor <= kubelet:
        return "same labels"
    return "other labels: " + "; ".join(",".join(x) for x in sorted(podvisor))


def compare_metrics(report, path, lines, bad):
    kubelet = samples(f"{report}/kubelet/metrics/{path}")
    podvisor = samples(f"{report}/podvisor/metrics/{path}")
    lines += [f"\n### /metrics/{path}\n", "| sample | kubelet's labels | podvisor |", "|---|---|---|"]
    for name in sorted(set(kubelet) | set(podvisor)):
        k, p = kubelet.get(name, set()), podvisor.get(name, set())
        v = verdict(k, p)
        if name in CLAIMED and k and v != "same labels":
            bad.append(f"/metrics/{path} {name}: {v}")
        labels = "; ".join(",".join(x) for x in sorted(k)) or "-"
        lines.append(f"| `{name}` | {labels} | {v} |")


def main():
    report = sys.argv[1]
    lines, bad = [], []
    for path in ("cadvisor", "resource"):
        compare_metrics(report, path, lines, bad)
    k = summary_fields(f"{report}/kubelet/metrics/summary")
    p = summary_fields(f"{report}/podvisor/metrics/summary")
    lines += ["\n### /stats/summary\n", "| field | kubelet | podvisor |", "|---|---|---|"]
    for f in sorted(k | p):
        lines.append(f"| `{f}` | {'yes' if f in k else '-'} | {'yes' if f in p else '-'} |")
    doc = "\n".join(lines) + "\n"
    print(doc)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as out:
            out.write(doc)
    if bad:
        print("metrics-compare: served unlike the kubelet:\n  " + "\n  ".join(bad), file=sys.stderr)
        sys.exit(1)


main()
