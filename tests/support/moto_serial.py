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

from moto.server import main  # noqa: E402  (after the patch)

if __name__ == "__main__":
    main(sys.argv[1:])
