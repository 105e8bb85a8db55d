"""An OTLP/HTTP trace receiver on loopback for the traces test.

POST /v1/traces  reads the body with OpenTelemetry's own protobuf bindings
                 (opentelemetry-proto), as a collector does: 400 when it is not
                 an ExportTraceServiceRequest. Records every span, the request's
                 headers, and whether the body is protobuf's canonical form
                 (serialising the parsed message gives the same bytes).
POST /status/N   answers N (an export that fails).
GET  /seen       everything recorded, as JSON.

Usage: otlp_receiver.py PORT [CERT KEY] (PORT 0: any; the first line says
which; with CERT and KEY it answers over TLS)
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

LOCK = threading.Lock()
SEEN = {"spans": [], "exports": [], "refused": []}


def value(any_value):
    kind = any_value.WhichOneof("value")
    return None if kind is None else getattr(any_value, kind)


def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, code, body=b"", content_type="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with LOCK:
            self.reply(200, json.dumps(SEEN).encode())

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.startswith("/status/"):
            with LOCK:
                SEEN["refused"].append(self.path)
            return self.reply(int(self.path.rsplit("/", 1)[1]))
        if self.path != "/v1/traces":
            return self.reply(404)
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError as e:
            with LOCK:
                SEEN["refused"].append(str(e))
            return self.reply(400)
        with LOCK:
            SEEN["exports"].append({
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "canonical": request.SerializeToString() == body,
                "spans": sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans),
            })
            for rs in request.resource_spans:
                resource = attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        SEEN["spans"].append({
                            "trace_id": s.trace_id.hex(),
                            "span_id": s.span_id.hex(),
                            "parent_span_id": s.parent_span_id.hex(),
                            "name": s.name,
                            "kind": s.kind,
                            "start": s.start_time_unix_nano,
                            "end": s.end_time_unix_nano,
                            "attributes": attrs(s.attributes),
                            "status": {"code": s.status.code, "message": s.status.message},
                            "resource": resource,
                            "scope": {"name": ss.scope.name, "version": ss.scope.version},
                        })
        self.reply(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
if len(sys.argv) > 3:
    import ssl
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2], sys.argv[3])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
