//! Code mode's shared test script (tests/tests/code_mode.rs on serve,
//! tests/tests/lambda_invoke.rs through the Lambda functions).

/// The ops script: 50 commands, 3 of them on the server named in
/// `gated.txt` (which gates them when it is `box`), each appending its
/// number to a log on the host (`log.txt` names it), so that the log shows
/// how often each ran.
pub const OPS_SCRIPT: &str = r#"
import random
from toolgate import tools
gated = open("gated.txt").read().strip()
log = open("log.txt").read().strip()
print("seed", random.random())
out = []
for i in range(50):
    if i in (10, 25, 40):
        r = tools.ssh_run(server_name=gated, command=f"echo gated-{i} >> {log}; echo g{i}")
    else:
        r = tools.ssh_run(server_name="twin", command=f"echo {i} >> {log}; echo {i}")
    out.append(r["stdout"].strip())
    print("step", i)
result = out
"#;
