//! Lambda events for in-process tests of `toolgate_lambda::Function`:
//! the committed fixtures, an invocation context, and response parsing.

use std::path::PathBuf;
use std::sync::{Mutex, Once};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lambda_http::Context;
use lambda_http::lambda_runtime::LambdaEvent;
use serde_json::Value;
use toolgate_lambda::Function;

/// A committed event from `fixtures/lambda/`.
pub fn fixture(name: &str) -> Value {
    let path = format!("{}/fixtures/lambda/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// An invocation context as the Runtime API gives it: `deadline_in` from now.
pub fn context(deadline_in: Duration) -> Context {
    let mut ctx = Context::default();
    ctx.request_id = "8f5c2c1e-7b7e-4a0e-9d36-2f1d4c1b2a90".into();
    ctx.deadline = (SystemTime::now() + deadline_in)
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64;
    ctx
}

/// Invokes `f` with `payload`; its answer, or its error's type and message.
/// (Records the ids and tokens in both for the log scan, [`crate::issued`].)
pub async fn invoke(f: &Function, payload: Value) -> Result<Value, (String, String)> {
    crate::issued::record_request_json(&payload);
    let out = f
        .handle(LambdaEvent::new(payload, context(Duration::from_secs(60))))
        .await
        .map_err(|d| (d.error_type, d.error_message));
    match &out {
        Ok(v) => crate::issued::record_json(v),
        Err((_, message)) => {
            crate::issued::record_text(message);
            crate::issued::record_json(&Value::String(message.clone()));
        }
    }
    out
}

/// An HTTP response event: status, headers and the body parsed as JSON.
pub fn http_parts(resp: &Value) -> (u64, Value, Value) {
    let status = resp["statusCode"].as_u64().expect("statusCode");
    let body = resp["body"].as_str().expect("text body");
    let parsed = serde_json::from_str(body).unwrap_or_else(|e| panic!("{body}: {e}"));
    crate::issued::record_json(&parsed);
    (status, resp["headers"].clone(), parsed)
}

/// The python.execute `Function` the Lambda binaries run, configured by
/// `env` (a stand-in for the process environment), with the real sandbox
/// behind it (its zygote is the `toolgate` binary, which shares the code).
/// Unless `env` names a data folder, the function gets a fresh one of its
/// own ([`fresh_data_dir`]): never one shared by tests, runs or users.
pub fn python_function(env: &dyn Fn(&str) -> Option<String>) -> Function {
    use toolgate_shared::config::Config;
    use toolgate_shared::toolset::Toolset;
    let named = env("TOOLGATE_DATA_DIR").is_some() || env("XDG_DATA_HOME").is_some();
    let data = (!named).then(fresh_data_dir);
    let env = |key: &str| match (key, &data) {
        ("TOOLGATE_DATA_DIR", Some(d)) => Some(d.to_string_lossy().into_owned()),
        _ => env(key),
    };
    let cfg = Config::from_parts("", "(test)", &env).expect("config");
    let mut sandbox = toolgate_python::sandbox_config(&cfg.python).expect("sandbox config");
    sandbox.exe = crate::toolgate_bin();
    // Sync for the tests' helpers: the build awaits nothing but the session
    // store's opening, and spawns no task, so a runtime of its own on a
    // thread of its own (the caller may be inside one) is enough.
    let tools = std::thread::scope(|s| {
        s.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime")
                .block_on(toolgate_python::WithPython::with_python_sandbox(
                    Toolset::new(),
                    &cfg,
                    sandbox,
                ))
        })
        .join()
        .expect("build thread")
    })
    .expect("sandbox starts");
    Function::new(&tools)
}

/// A new folder (not made) for one `Function`'s stores, removed when the
/// test binary exits: `Function` is the callers' type, so the folder
/// cannot live in a wrapper dropped with it.
pub fn fresh_data_dir() -> PathBuf {
    static DIRS: Mutex<Vec<crate::launch::TempDir>> = Mutex::new(Vec::new());
    static AT_EXIT: Once = Once::new();
    extern "C" fn remove_all() {
        // Dropping each TempDir removes its folder.
        DIRS.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
    AT_EXIT.call_once(|| {
        // SAFETY: registers a function with no arguments that only removes
        // folders; libtest's exit (success or failure) runs it.
        unsafe { libc::atexit(remove_all) };
    });
    let dir = crate::launch::TempDir::new("toolgate-lambda-data");
    let data = dir.path().join("data");
    DIRS.lock().unwrap_or_else(|p| p.into_inner()).push(dir);
    data
}
