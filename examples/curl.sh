#!/usr/bin/env bash
# Plain HTTP: list the tools, run a script, and see an error's shape.
#   TOOLGATE_TOKEN=... ./curl.sh
set -euo pipefail
base=${TOOLGATE_BASE:-http://127.0.0.1:8080}
# The header, when there is a token (an empty array trips macOS's bash 3.2
# under set -u, hence the form below).
auth=()
if [ -n "${TOOLGATE_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $TOOLGATE_TOKEN"); fi

curl -sf ${auth[@]+"${auth[@]}"} "$base/tools?format=openai" | cut -c1-200
curl -sf ${auth[@]+"${auth[@]}"} "$base/tools/python.execute" \
  -H 'Content-Type: application/json' \
  -d '{"code": "result = sum(n * n for n in range(5))"}'
echo
# A misspelt argument is an error naming it, never ignored (HTTP 400).
curl -s ${auth[@]+"${auth[@]}"} "$base/tools/python.execute" \
  -H 'Content-Type: application/json' \
  -d '{"code": "1", "sesion": "new"}'
echo
