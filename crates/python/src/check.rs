//! `toolgate check`'s view of python.execute: a script run through the
//! tool as a caller's would be, and each wall of the sandbox as checked
//! (the zygote's as it warmed, the pool's by its probe, run now).

use std::time::Instant;

use serde_json::json;
use toolgate_shared::check::{Finding, Status};
use toolgate_shared::tool::{CallContext, Tool};

use crate::sandbox::Sandbox;

/// What a run of `tool` and `sandbox`'s walls show.
pub(crate) async fn findings(tool: &dyn Tool, sandbox: &Sandbox) -> Vec<Finding> {
    let started = Instant::now();
    let ran = tool
        .call(
            json!({"code": "result = sum(range(10))"}),
            &CallContext::default(),
        )
        .await;
    let ran = match ran {
        Ok(out) if out["result"] == 45 => Ok(format!(
            "ran a script in {} ms",
            started.elapsed().as_millis()
        )),
        Ok(out) => Err(format!(
            "a script that sets result = 45 answered {out}: the sandbox does not run scripts as it should"
        )),
        Err(e) => Err(format!("cannot run a script: {}", e.message)),
    };
    // The pool's own walls, checked now by its probe scripts.
    sandbox.probe_walls().await;
    let walls = match sandbox.walls() {
        None => Finding::new(
            "python.execute walls",
            Status::Fail,
            "the sandbox has not reported its walls",
        ),
        Some(w) => {
            let off: Vec<&str> = [
                ("capability_gap", w.capability_gap),
                ("scrub", w.scrub),
                ("process_per_call", w.process_per_call),
                ("instance_per_call", w.instance_per_call),
                ("rlimits", w.rlimits),
                ("seccomp", w.seccomp),
                ("stop_at_deadline", w.stop_at_deadline),
                ("kill_at_deadline", w.kill_at_deadline),
            ]
            .into_iter()
            .filter(|(_, on)| !on)
            .map(|(name, _)| name)
            .collect();
            if off.is_empty() {
                Finding::new(
                    "python.execute walls",
                    Status::Ok,
                    format!("all on; {} MiB per script", w.memory_mb),
                )
            } else {
                let why: String = [("seccomp", w.seccomp_error), ("probe", w.probe_error)]
                    .into_iter()
                    .filter_map(|(what, e)| Some(format!(" ({what}: {})", e?)))
                    .collect();
                Finding::new(
                    "python.execute walls",
                    Status::Warn,
                    format!(
                        "off: {}{why}; docs/sandbox.md says what each wall is",
                        off.join(", ")
                    ),
                )
            }
        }
    };
    vec![Finding::of("python.execute", ran), walls]
}
