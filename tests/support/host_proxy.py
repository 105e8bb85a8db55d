"""A reverse proxy as Caddy and Traefik are by default: every request is
passed on to the upstream (argv[1], host:port) with the client's own Host
header, body and method; the answer comes back as it is. It listens on
127.0.0.1 on a port of the system's choosing and prints `listening on 127.0.0.1:N` once
listening. Standard library only."""

import http.client
import http.server
import sys

UPSTREAM = sys.argv[1]


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        conn = http.client.HTTPConnection(UPSTREAM, timeout=30)
        # skip_host: the client's Host header goes as it came.
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in self.headers.items():
            if k.lower() not in ("connection", "keep-alive", "proxy-connection"):
                conn.putheader(k, v)
        conn.putheader("X-Forwarded-Proto", "https")
        conn.endheaders(body)
        res = conn.getresponse()
        data = res.read()
        self.send_response(res.status, res.reason)
        for k, v in res.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    do_GET = do_POST = do_PUT = do_DELETE = forward

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
