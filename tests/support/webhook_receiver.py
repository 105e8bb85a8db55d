"""A webhook receiver on loopback for the notification tests.

POST /hook   verifies Toolgate's signature with the code docs/notifications.md
             shows (between the snippet markers; the test checks the page
             has it verbatim): 401 for a bad signature, 409 for a replay.
POST /slack  records a Slack incoming-webhook message.
POST /sns    records an SNS HTTP notification (moto delivers them);
POST /sns-cancelled  the same, for a subscription filtered by `event`.
POST /down   always 500 (counts attempts).
POST /slow   answers after 3 s.
POST /redirect  307 to /hook (counts attempts): a sender must not follow.
POST /hang   answers after 8 s (records when each attempt began).
GET  /seen   everything recorded, as JSON.

Usage: webhook_receiver.py PORT SECRET (PORT 0: any; the first line says which)
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# --- docs snippet start ---
import hashlib
import hmac

def verify(secret: bytes, headers, body: bytes, seen: set, now: float) -> str | None:
    """None when the event is authentic, fresh and new; else why not."""
    ts = headers.get("Toolgate-Timestamp", "")
    sig = headers.get("Toolgate-Signature", "")
    expected = "v1=" + hmac.new(secret, ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(sig, expected):
        return "bad signature"
    if not ts.isdigit() or abs(now - int(ts)) > 300:
        return "stale timestamp"
    delivery = headers.get("Toolgate-Delivery", "")
    if delivery in seen:
        return "replayed delivery"
    seen.add(delivery)
    return None
# --- docs snippet end ---

LOCK = threading.Lock()
SEEN = {"hook": [], "slack": [], "sns": [], "sns-cancelled": [], "down": 0, "slow": [], "refused": [],
        "redirect": 0, "hang": []}
DELIVERIES: set = set()
SECRET = sys.argv[2].encode()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, code, obj=None):
        body = json.dumps(obj if obj is not None else {}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with LOCK:
            self.reply(200, SEEN)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        path = self.path.strip("/")
        headers = {k.lower(): v for k, v in self.headers.items()}
        if path == "hook":
            with LOCK:
                why = verify(SECRET, self.headers, body, DELIVERIES, time.time())
                if why:
                    SEEN["refused"].append(why)
                    return self.reply(409 if why == "replayed delivery" else 401, {"error": why})
                SEEN["hook"].append({"headers": headers, "body": json.loads(body)})
            return self.reply(200)
        if path in ("slack", "sns", "sns-cancelled"):
            with LOCK:
                SEEN[path].append({"headers": headers, "body": json.loads(body)})
            return self.reply(200)
        if path == "down":
            with LOCK:
                SEEN["down"] += 1
            return self.reply(500)
        if path == "redirect":
            with LOCK:
                SEEN["redirect"] += 1
            self.send_response(307)
            self.send_header("Location", "/hook")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path == "hang":
            with LOCK:
                SEEN["hang"].append(time.time())
            time.sleep(8)
            return self.reply(200)
        if path == "slow":
            with LOCK:
                SEEN["slow"].append("started")
            time.sleep(3)
            with LOCK:
                SEEN["slow"].append("finished")
            return self.reply(200)
        self.reply(404)


# Port 0: the kernel picks a free one and the receiver says which, so no
# other process can take it between the choice and the bind.
server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
