"""Parses Prometheus text from stdin with the real prometheus_client parser and prints
what it found as JSON: one object per metric family, with its type and samples.

Used by crates/wsbench/tests/live.rs to read `wsbench run --metrics-addr` during a run:
the parser, not our own code, decides whether the page is well-formed (it raises on a
malformed line, which exits non-zero with the parser's message).
"""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

families = {}
for family in text_string_to_metric_families(sys.stdin.read()):
    families[family.name] = {
        "type": family.type,
        "samples": [[s.name, s.labels, s.value] for s in family.samples],
    }
json.dump(families, sys.stdout)
