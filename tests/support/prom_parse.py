"""Reads Prometheus's text format on stdin with the reference parser
(prometheus_client's), and prints the samples as JSON:
[{"family", "type", "name", "labels", "value"}]. A line the parser refuses
fails with its error."""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families

out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append({"family": family.name, "type": family.type, "name": s.name,
                    "labels": s.labels, "value": s.value})
print(json.dumps(out))
