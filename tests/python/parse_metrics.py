"""Parses a Prometheus text exposition (stdin) with Prometheus' own Python parser, which
refuses a malformed one, and prints its families as JSON:
{name: {"type": ..., "help": ..., "samples": [[sample name, labels, value], ...]}}; a value
that JSON cannot hold (+Inf, -Inf, NaN) as its text.
"""
import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families

out = {}
for family in text_string_to_metric_families(sys.stdin.read()):
    out[family.name] = {
        "type": family.type,
        "help": family.documentation,
        "samples": [[s.name, s.labels, s.value if math.isfinite(s.value) else str(s.value)]
                    for s in family.samples],
    }
print(json.dumps(out))
