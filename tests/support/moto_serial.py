#!/usr/bin/env python3
"""moto_server, one request at a time.

    python moto_serial.py -H 127.0.0.1 -p PORT

moto's backends take no lock: two concurrent conditional UpdateItem calls
can both pass their condition (seen: two winners of one clarification,
under load). Real DynamoDB applies each conditional write atomically, and
the tests check code that relies on that, so this moto serves one request
at a time (still on several connections, as moto_server does).

moto 5.2.5 has no ValidateStateMachineDefinition nor
ListStateMachineVersions, which the Terraform AWS provider calls around a
state machine's creation: the first is answered here by check_asl.py's
checker (LocalStack's ASL parser as moto vendors it, plus the checks AWS
makes), a stand-in for AWS's own validator; the second from moto's model.
Nor does it keep a function's LoggingConfig, which the provider reads back
(without it every plan after the first would change every function): kept
here as given.

With TOOLGATE_MOTO_LAMBDA_ENDPOINT set (`cargo lambda watch`'s Invoke
API), a state machine moto executes invokes its Lambda tasks there: the
real functions, which moto's own Lambda would need Docker to run.
"""

import os
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


def _validate_state_machine_definition(self):
    import json
    import os

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from check_asl import check

    problems, _ = check(self._get_param("definition") or "", self._get_param("type") or "STANDARD")
    return json.dumps(
        {
            "result": "FAIL" if problems else "OK",
            "diagnostics": [
                {"severity": "ERROR", "code": "SCHEMA_VALIDATION_FAILED", "message": p}
                for p in problems
            ],
            "truncated": False,
        }
    )


def _list_state_machine_versions(self):
    import json

    sm = self.stepfunction_backend.describe_state_machine(self._get_param("stateMachineArn"))
    versions = sorted(getattr(sm, "versions", {}).values(), key=lambda v: -v.version)
    return json.dumps(
        {
            "stateMachineVersions": [
                {"stateMachineVersionArn": v.arn, "creationDate": v.creation_date.timestamp()}
                for v in versions
            ]
        }
    )


from moto.stepfunctions.responses import StepFunctionResponse  # noqa: E402

StepFunctionResponse.validate_state_machine_definition = _validate_state_machine_definition
StepFunctionResponse.list_state_machine_versions = _list_state_machine_versions

from moto.awslambda.models import LambdaFunction  # noqa: E402

_init, _get_config, _update_config = (
    LambdaFunction.__init__,
    LambdaFunction.get_configuration,
    LambdaFunction.update_configuration,
)


def _lambda_init(self, account_id, spec, region, *args, **kwargs):
    _init(self, account_id, spec, region, *args, **kwargs)
    self.logging_config = spec.get("LoggingConfig")


def _lambda_get_config(self, *args, **kwargs):
    config = _get_config(self, *args, **kwargs)
    if getattr(self, "logging_config", None):
        config["LoggingConfig"] = self.logging_config
    return config


def _lambda_update_config(self, updates):
    if "LoggingConfig" in updates:
        self.logging_config = updates["LoggingConfig"]
    return _update_config(self, updates)


LambdaFunction.__init__ = _lambda_init
LambdaFunction.get_configuration = _lambda_get_config
LambdaFunction.update_configuration = _lambda_update_config


class _WatchInvoke:
    """Lambda's Invoke at `cargo lambda watch`, as the Step Functions
    interpreter calls it. The watch answers a function error with a 500 and
    the error's JSON; Lambda answers 200 with X-Amz-Function-Error, which
    is what the interpreter reads: translated here."""

    def __init__(self, endpoint):
        self.endpoint = endpoint.rstrip("/")

    def invoke(self, FunctionName, Payload=b"{}", **_):
        import io
        import json
        import urllib.error
        import urllib.parse
        import urllib.request

        url = "%s/2015-03-31/functions/%s/invocations" % (
            self.endpoint,
            urllib.parse.quote(FunctionName, safe=""),
        )
        request = urllib.request.Request(url, data=Payload, method="POST")
        answer = {"StatusCode": 200, "ExecutedVersion": "$LATEST"}
        try:
            with urllib.request.urlopen(request, timeout=900) as r:
                body = r.read()
        except urllib.error.HTTPError as e:
            body = e.read()
            try:
                json.loads(body)["errorType"]
            except Exception:
                raise e from None
            answer["FunctionError"] = "Unhandled"
        answer["Payload"] = io.BytesIO(body)
        return answer


def _lambda_tasks_at(endpoint):
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
    from moto.stepfunctions.parser.asl.utils import boto_client

    moto_client_for = boto_client.boto_client_for

    def client_for(region, service, state_credentials=None):
        if service != "lambda":
            return moto_client_for(region, service, state_credentials)
        return _WatchInvoke(endpoint)

    lambda_eval_utils.boto_client_for = client_for


if os.environ.get("TOOLGATE_MOTO_LAMBDA_ENDPOINT"):
    _lambda_tasks_at(os.environ["TOOLGATE_MOTO_LAMBDA_ENDPOINT"])

from moto.server import main  # noqa: E402  (after the patch)

if __name__ == "__main__":
    main(sys.argv[1:])
