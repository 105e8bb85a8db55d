#!/usr/bin/env python3
"""A stand-in for an OAuth token endpoint (Cognito's /oauth2/token): no
Cognito can run here. Client credentials only.

    python token_endpoint.py PORT CLIENT_ID CLIENT_SECRET EXPIRES_IN TOKEN...

Hands out the TOKENs in turn (the last one again once they run out), each
with `expires_in` EXPIRES_IN, to a POST with HTTP Basic CLIENT_ID:CLIENT_SECRET
and grant_type=client_credentials; anything else gets RFC 6749's
invalid_client or unsupported_grant_type. Prints one JSON line per request
on stdout: {"issued": token or null, "scope": ..., "error": ...}.
"""

import base64
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, CLIENT_ID, CLIENT_SECRET, EXPIRES_IN = sys.argv[1:5]
TOKENS = sys.argv[5:]
issued = 0


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, record):
        print(json.dumps(record), flush=True)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        global issued
        length = int(self.headers.get("content-length") or 0)
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        scope = form.get("scope", [None])[0]
        if self.headers.get("authorization") != expected:
            return self.answer(401, {"error": "invalid_client"}, {"issued": None, "error": "invalid_client"})
        if form.get("grant_type") != ["client_credentials"]:
            return self.answer(400, {"error": "unsupported_grant_type"}, {"issued": None, "error": "unsupported_grant_type"})
        token = TOKENS[min(issued, len(TOKENS) - 1)]
        issued += 1
        body = {"access_token": token, "expires_in": int(EXPIRES_IN), "token_type": "Bearer"}
        self.answer(200, body, {"issued": token, "scope": scope})


ThreadingHTTPServer(("127.0.0.1", int(PORT)), Handler).serve_forever()
