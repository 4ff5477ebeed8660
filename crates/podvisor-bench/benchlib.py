"""What the Python benchmark drivers share: the agent's RSS, percentiles and table rows."""

import os


def scale(var):
    """The divisor of every count, from the environment variable `var` (default 1)."""
    return max(1, int(os.environ.get(var, "1")))


def rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024


def pct_ms(v, q):
    """The `q` quantile of `v` (seconds), nearest rank, in milliseconds."""
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(q * len(v) + 0.999) - 1))] * 1000


def row(name, v, digits=2):
    print(f"| {name} | {len(v)} | {pct_ms(v, .5):.{digits}f} | {pct_ms(v, .99):.{digits}f} |")
