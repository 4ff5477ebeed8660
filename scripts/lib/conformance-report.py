"""Reads scripts/conformance's JUnit reports (one directory per node) and prints the
comparison; with a third argument, writes it as docs/conformance.md.

usage: conformance-report.py REPORT_DIR IMAGES_TXT [DOC]
"""

import datetime
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

# Areas by the spec's leading describe text, most specific first.
AREAS = [
    "Projected downwardAPI", "Projected configMap", "Projected secret", "Projected combined",
    "Downward API volume", "Downward API", "EmptyDir wrapper volumes", "EmptyDir volumes",
    "ConfigMap", "Secrets", "Pods Extended", "PodTemplates", "Pods", "Probing container",
    "Container Lifecycle Hook", "Security Context", "Sysctls", "InitContainer",
    "Restartable Init Container", "Probing restartable init container",
    "Ephemeral Containers", "Pod InPlace Resize", "Lifecycle Sleep Hook",
    "Lifecycle sleep action", "HostPath", "Override hostname", "PodOSRejection",
    "Pod Extended",
    "Pod Level Resources", "Container Runtime", "Kubelet", "Variable Expansion",
    "Containers", "RuntimeClass", "PrivilegedPod", "NodeLease", "Lease", "Networking",
    "Job", "Hostname", "Pod OS", "Sleep Action", "ImageVolume", "Container Restart",
    "KubeletManagedEtcHosts", "Image Credential Provider",
]


def spec_name(case):
    name = case.get("name", "")
    name = re.sub(r"^\[It\]\s*", "", name)
    return name.strip()


def area_of(name):
    text = re.sub(r"^(\[[^\]]+\]\s*)+", "", name)
    for area in AREAS:
        if text.startswith(area):
            return area
    return " ".join(text.split()[:2])


def outcome(case):
    """'passed', 'failed' or None (not run: skipped by the selection)."""
    if case.find("skipped") is not None:
        return None
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    return "passed"


def message(case):
    f = case.find("failure")
    if f is None:
        f = case.find("error")
    text = (f.get("message") or f.text or "") if f is not None else ""
    first = next((l.strip() for l in text.splitlines() if l.strip()), "")
    return first[:300]


SUITE_NODE = re.compile(r"^\[(Synchronized|Report)(Before|After)Suite\]")


def read(report, kind):
    results = {}
    for path in sorted(glob.glob(os.path.join(report, kind, "junit*.xml"))):
        for case in ET.parse(path).getroot().iter("testcase"):
            state = outcome(case)
            name = spec_name(case)
            # The suite's own setup and teardown nodes are no specs.
            if state and name and not SUITE_NODE.match(name):
                results[name] = (state, message(case))
    return results


def table(runs):
    kinds = list(runs)
    names = sorted(set().union(*[set(r) for r in runs.values()]))
    areas = {}
    for n in names:
        row = areas.setdefault(area_of(n), {"specs": 0, **{k: 0 for k in kinds}})
        row["specs"] += 1
        for k in kinds:
            if runs[k].get(n, ("", ""))[0] == "passed":
                row[k] += 1
    lines = ["| area | specs | " + " | ".join(f"passed on {k}" for k in kinds) + " |",
             "|---|---|" + "---|" * len(kinds)]
    for area in sorted(areas):
        row = areas[area]
        lines.append(f"| {area} | {row['specs']} | " + " | ".join(str(row[k]) for k in kinds) + " |")
    total = {k: sum(1 for n in names if runs[k].get(n, ("",))[0] == "passed") for k in kinds}
    lines.append(f"| **all** | **{len(names)}** | " + " | ".join(f"**{total[k]}**" for k in kinds) + " |")
    return names, lines


def causes():
    """Known causes by spec name (scripts/lib/conformance-causes.txt: a regular expression, a
    tab, the cause)."""
    path = os.path.join(os.path.dirname(__file__), "conformance-causes.txt")
    out = []
    for line in open(path):
        line = line.rstrip("\n")
        if line and not line.startswith("#"):
            pattern, cause = line.split("\t", 1)
            out.append((re.compile(pattern), cause))
    return out


KNOWN = causes()


def explained(name, message):
    for pattern, cause in KNOWN:
        if pattern.search(name):
            return f"{cause} (`{message}`)"
    return f"`{message}`"


def differences(runs, names):
    out = []
    if {"podvisor", "kubelet"} <= set(runs):
        p, k = runs["podvisor"], runs["kubelet"]
        only = [n for n in names if k.get(n, ("",))[0] == "passed" and p.get(n, ("",))[0] != "passed"]
        both = [n for n in names if k.get(n, ("",))[0] == "failed" and p.get(n, ("",))[0] == "failed"]
        better = [n for n in names if p.get(n, ("",))[0] == "passed" and k.get(n, ("",))[0] == "failed"]
        out.append(f"\n### Failing on podvisor only ({len(only)})\n")
        out += [f"- {n}: {explained(n, p.get(n, ('', 'not run'))[1])}" for n in only] or ["- none"]
        out.append(f"\n### Failing on both ({len(both)})\n")
        out += [f"- {n}: {explained(n, k[n][1])}" for n in both] or ["- none"]
        out.append(f"\n### Passing on podvisor only ({len(better)})\n")
        out += [f"- {n}: kubelet: {k[n][1]}" for n in better] or ["- none"]
    else:
        for kind, r in runs.items():
            failed = [n for n in names if r.get(n, ("",))[0] == "failed"]
            out.append(f"\n### Failing on {kind} ({len(failed)})\n")
            out += [f"- {n}: {explained(n, r[n][1])}" for n in failed] or ["- none"]
    return out


def images(path):
    rows = ["| image | what it is here |", "|---|---|"]
    for line in open(path):
        name, _, what = line.rstrip("\n").split("\t")
        rows.append(f"| `{name}` | {what} |")
    return rows


def main():
    report, images_txt = sys.argv[1], sys.argv[2]
    doc = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    runs = {k: read(report, k) for k in ("podvisor", "kubelet")
            if os.path.isdir(os.path.join(report, k))}
    runs = {k: v for k, v in runs.items() if v}
    if not runs:
        sys.exit("conformance-report: no JUnit report found in " + report)
    names, lines = table(runs)
    body = lines + differences(runs, names)
    print("\n".join(body))
    if doc:
        head = open(os.path.join(os.path.dirname(__file__), "conformance-head.md")).read()
        date = datetime.date.today().isoformat()
        text = head.replace("@DATE@", date) + "\n".join(lines) + "\n" + "\n".join(
            differences(runs, names)) + "\n\n## The images\n\n" + "\n".join(images(images_txt)) + "\n"
        # Selections beyond the default one (in-place resize, [Slow]), their runs and
        # results, are written by hand: kept as they are.
        tail = os.path.join(os.path.dirname(__file__), "conformance-tail.md")
        if os.path.exists(tail):
            text += "\n" + open(tail).read()
        with open(doc, "w") as f:
            f.write(text)


main()
