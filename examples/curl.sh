#!/usr/bin/env bash
# Plain HTTP: list the tools, run a script, and see an error's shape.
#   TOOLGATE_TOKEN=... ./curl.sh
set -euo pipefail
base=${TOOLGATE_BASE:-http://127.0.0.1:8080}
auth=()
[ -n "${TOOLGATE_TOKEN:-}" ] && auth=(-H "Authorization: Bearer $TOOLGATE_TOKEN")

curl -sf "${auth[@]}" "$base/tools?format=openai" | head -c 200; echo
curl -sf "${auth[@]}" "$base/tools/python.execute" \
  -H 'Content-Type: application/json' \
  -d '{"code": "result = sum(n * n for n in range(5))"}'
echo
# A misspelt argument is an error naming it, never ignored (HTTP 400).
curl -s "${auth[@]}" "$base/tools/python.execute" \
  -H 'Content-Type: application/json' \
  -d '{"code": "1", "sesion": "new"}'
echo
