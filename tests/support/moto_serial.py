#!/usr/bin/env python3
"""moto_server, one request at a time.

    python moto_serial.py -H 127.0.0.1 -p PORT

moto's backends take no lock: two concurrent conditional UpdateItem calls
can both pass their condition (seen: two winners of one clarification,
under load). Real DynamoDB applies each conditional write atomically, and
the tests check code that relies on that, so this moto serves one request
at a time (still on several connections, as moto_server does).
"""

import sys
import threading

from moto.moto_server.werkzeug_app import DomainDispatcherApplication

_lock = threading.Lock()
_call = DomainDispatcherApplication.__call__


def _serial_call(self, environ, start_response):
    with _lock:
        # moto's responses are built in the call: read them out under the lock.
        body = _call(self, environ, start_response)
        try:
            return list(body)
        finally:
            if hasattr(body, "close"):
                body.close()


DomainDispatcherApplication.__call__ = _serial_call

from moto.server import main  # noqa: E402  (after the patch)

if __name__ == "__main__":
    main(sys.argv[1:])
