//! Step Functions executions in moto that wait on a task token, driven
//! with boto3 from the tools' venv: what the clarify tests complete or fail.

use std::process::Command;

use serde_json::Value;

use crate::peer::{run_ok, tools_dir};

/// Runs Python (boto3, from the moto venv) against moto.
pub fn boto(endpoint: &str, script: &str, args: &[&str]) -> String {
    run_ok(
        Command::new(tools_dir().join("aws/bin/python"))
            .arg("-c")
            .arg(format!(
                "import boto3, json, sys, time\nkw = dict(endpoint_url=sys.argv[1], region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\n{script}"
            ))
            .arg(endpoint)
            .args(args),
        "boto3 against moto",
    )
}

/// moto runs state machines only when asked to.
pub fn execute_state_machines(endpoint: &str) {
    boto(
        endpoint,
        r#"
import urllib.request
req = urllib.request.Request(sys.argv[1] + '/moto-api/config', data=json.dumps({"stepfunctions": {"execute_state_machine": True}}).encode(), method='POST')
urllib.request.urlopen(req).read()
"#,
        &[],
    );
}

pub const AWS: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "testing"),
    ("AWS_SECRET_ACCESS_KEY", "testing"),
    ("AWS_REGION", "us-east-1"),
];

/// A state machine whose one state sends its task token to an SQS queue
/// and waits (`sqs:sendMessage.waitForTaskToken`); returns the execution
/// ARN and the token, read from the queue.
pub fn start_waiting_execution(endpoint: &str, name: &str) -> (String, String) {
    let out = boto(
        endpoint,
        r#"
sqs = boto3.client('sqs', **kw); sfn = boto3.client('stepfunctions', **kw)
q = sqs.create_queue(QueueName=sys.argv[2])['QueueUrl']
definition = {"StartAt": "Ask", "States": {"Ask": {"Type": "Task",
  "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
  "Parameters": {"QueueUrl": q, "MessageBody": {"token.$": "$$.Task.Token"}}, "End": True}}}
sm = sfn.create_state_machine(name=sys.argv[2], definition=json.dumps(definition),
  roleArn='arn:aws:iam::123456789012:role/sfn')['stateMachineArn']
ex = sfn.start_execution(stateMachineArn=sm, input='{}')['executionArn']
for _ in range(100):
    msgs = sqs.receive_message(QueueUrl=q, WaitTimeSeconds=1).get('Messages', [])
    if msgs:
        print(ex); print(json.loads(msgs[0]['Body'])['token']); break
else:
    sys.exit('no task token arrived')
"#,
        &[name],
    );
    let mut lines = out.lines();
    let (execution, token) = (lines.next().unwrap(), lines.next().unwrap());
    crate::issued::record("task_token", token);
    (execution.to_owned(), token.to_owned())
}

/// Polls the execution until it leaves RUNNING; returns status, output, error.
pub fn finished(endpoint: &str, execution: &str) -> Value {
    let out = boto(
        endpoint,
        r#"
sfn = boto3.client('stepfunctions', **kw)
for _ in range(100):
    d = sfn.describe_execution(executionArn=sys.argv[2])
    if d['status'] != 'RUNNING':
        break
    time.sleep(0.2)
print(json.dumps({"status": d['status'], "output": d.get('output'), "error": d.get('error'), "cause": d.get('cause')}))
"#,
        &[execution],
    );
    serde_json::from_str(out.trim()).unwrap()
}
