//! python.execute's `files` against the real binary: what CPython 3.13 does
//! with the same files on a real folder (`tests/fixtures/files_cases.json`,
//! recorded by `scripts/gen-files-cases`), hostile names and sizes, the
//! host out of reach, and files as MCP embedded resources.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use toolgate_e2e::Server;

fn cases() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/files_cases.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["cases"].as_array().unwrap().clone()
}

#[test]
fn scripts_read_and_write_files_as_cpython_does() {
    let s = Server::start(&[]);
    let cases = cases();
    assert!(cases.len() >= 8);
    let mut failures = Vec::new();
    for c in &cases {
        let r = s.post_json(
            "/tools/python.execute",
            &json!({"code": c["code"], "files": c["files"]}),
        );
        assert_eq!(r.status, 200, "{}", c["name"]);
        let out = r.json();
        let got = (
            &out["stdout"],
            &out["exit_code"],
            out.get("files").cloned().unwrap_or(json!({})),
        );
        let want = (&c["stdout"], &c["exit_code"], c["files_out"].clone());
        if got != want {
            failures.push(format!(
                "{}:\n  got  {got:?}\n  want {want:?}\n  stderr {}",
                c["name"], out["stderr"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_host_stays_out_of_reach() {
    let s = Server::start(&[]);
    let code = "import json\nfor p in ['/etc/passwd', '../../etc/passwd', 'a/../../etc/hostname']:\n    try:\n        open(p).read()\n        print('read', p)\n    except OSError as e:\n        print(type(e).__name__, e)\n";
    let out = s
        .post_json(
            "/tools/python.execute",
            &json!({"code": code, "files": {"a/x.txt": "x"}}),
        )
        .json();
    assert_eq!(
        out["stdout"],
        "FileNotFoundError [Errno 2] No such file or directory: '/etc/passwd'\n\
         FileNotFoundError [Errno 2] No such file or directory: '../../etc/passwd'\n\
         FileNotFoundError [Errno 2] No such file or directory: 'a/../../etc/hostname'\n",
        "{out}"
    );
    // A traceback shows no frame of the sandbox's own `open`, as CPython
    // shows none for its built-in one.
    let out = s
        .post_json("/tools/python.execute", &json!({"code": "open('x')"}))
        .json();
    assert_eq!(
        out["stderr"],
        "Traceback (most recent call last):\n  File \"<agent_script>\", line 1, in <module>\n    \
         open('x')\nFileNotFoundError: [Errno 2] No such file or directory: 'x'\n"
    );
    assert!(out.get("files").is_none(), "no files, no field: {out}");
}

#[test]
fn hostile_names_and_sizes_are_clear_errors() {
    let s = Server::start(&[("TOOLGATE_PYTHON_MAX_FILES_MB", "1")]);
    let call = |files: Value| {
        let r = s.post_json(
            "/tools/python.execute",
            &json!({"code": "print(1)", "files": files}),
        );
        let v = r.json();
        (
            r.status,
            v["error"]["code"].as_str().unwrap_or("").to_owned(),
            v["error"]["message"].as_str().unwrap_or("").to_owned(),
        )
    };
    let long = "n".repeat(256);
    for (files, says) in [
        (json!({"../etc/passwd": "x"}), "'..'"),
        (json!({"/etc/passwd": "x"}), "absolute"),
        (json!({"a\u{0}b": "x"}), "NUL"),
        (json!({long: "x"}), "255 bytes"),
        (json!({"": "x"}), "is empty"),
        (json!({"a": 1}), "must be text or"),
        (json!({"a": {"base64": "%%%"}}), "base64 is not valid"),
        (json!({"a": "x", "a/b": "y"}), "also the folder"),
        (json!(["a"]), "must be an object"),
        (
            json!({"big": "x".repeat((1 << 20) + 1)}),
            "1048576 bytes, the limit",
        ),
    ] {
        let (status, code, msg) = call(files.clone());
        assert_eq!((status, code.as_str()), (400, "invalid_input"), "{msg}");
        assert!(msg.contains(says), "{says}: {msg}");
    }
    let many: serde_json::Map<String, Value> =
        (0..1001).map(|i| (format!("f{i}"), json!(""))).collect();
    let (_, code, msg) = call(Value::Object(many));
    assert_eq!(code, "invalid_input");
    assert!(msg.contains("limit of 1000"), "{msg}");

    // What a script writes past the cap is left out, and said so; the rest
    // comes back.
    let code = "open('a.txt', 'w').write('x' * 600_000)\nopen('b.txt', 'w').write('y' * 600_000)\nprint('done')";
    let out = s
        .post_json("/tools/python.execute", &json!({"code": code}))
        .json();
    assert_eq!(out["stdout"], "done\n");
    assert_eq!(out["files"]["a.txt"].as_str().map(str::len), Some(600_000));
    assert!(out["files"].get("b.txt").is_none(), "{}", out["stderr"]);
    assert!(
        out["stderr"]
            .as_str()
            .unwrap()
            .contains("[files not returned: \"b.txt\" (600000 bytes)"),
        "{}",
        out["stderr"]
    );
}

#[test]
fn what_a_script_returns_is_kept_to_what_a_call_could_give() {
    let s = Server::start(&[]);
    let run = |code: &str, files: Value| {
        s.post_json(
            "/tools/python.execute",
            &json!({"code": code, "files": files}),
        )
        .json()
    };
    // More files than a call may return: the first 1000 by name, a note,
    // and the script's own output kept.
    let out = run(
        "for i in range(1001):\n    open('f%04d.txt' % i, 'w').write('x')\nprint('done')",
        json!({}),
    );
    assert_eq!(
        (&out["stdout"], &out["exit_code"]),
        (&json!("done\n"), &json!(0))
    );
    assert_eq!(
        out["files"].as_object().unwrap().len(),
        1000,
        "{}",
        out["stderr"]
    );
    assert!(out["files"].get("f1000.txt").is_none());
    assert!(
        out["stderr"]
            .as_str()
            .unwrap()
            .contains("[1 files not returned: a call returns at most 1000 files]"),
        "{}",
        out["stderr"]
    );
    // A store tampered with into a file that is also a folder, and a name
    // no file system holds: left out, said so, the rest returned.
    let out = run(
        "g = open.__globals__['_store']\ng['a'] = b'1'\ng['a/b'] = b'2'\ng['\\ud800'] = b'3'\nopen('ok.txt', 'w').write('ok')",
        json!({}),
    );
    assert_eq!(out["files"], json!({"a": "1", "ok.txt": "ok"}), "{out}");
    let err = out["stderr"].as_str().unwrap();
    assert!(
        err.contains("[file \"a/b\" not returned: its folder is also a file]"),
        "{err}"
    );
    assert!(
        err.contains("[1 files not returned: their names are not UTF-8]"),
        "{err}"
    );
    // Base64 wrapped over lines, as `base64` and MIME write it.
    let out = run(
        "print(open('w.bin', 'rb').read())",
        json!({"w.bin": {"base64": "eHh4\neHh4\r\n"}}),
    );
    assert_eq!(out["stdout"], "b'xxxxxx'\n", "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_gives_returned_files_as_embedded_resources() {
    let s = Server::start(&[]);
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{}/mcp", s.addr));
    let client = ().serve(transport).await.unwrap();
    let mut call = CallToolRequestParams::new("python__execute");
    call.arguments = json!({
        "code": "open('out/r port.txt', 'w').write(open('out/in.txt').read().upper())\nopen('b.bin', 'wb').write(b'\\xff\\x00')\nimport base64\nopen('pic.png', 'wb').write(base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='))",
        "files": {"out/in.txt": "hello"}
    })
    .as_object()
    .cloned();
    let r = client.call_tool(call).await.unwrap();
    let v = serde_json::to_value(&r.content).unwrap();
    let resources: Vec<&Value> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "resource")
        .collect();
    // Every resource has a media type clients can hand to a model; bytes
    // that are no image or PDF stay in `files` alone.
    assert_eq!(resources.len(), 2, "{v}");
    assert_eq!(resources[0]["resource"]["uri"], "file:///out/r%20port.txt");
    assert_eq!(resources[0]["resource"]["text"], "HELLO");
    assert_eq!(resources[0]["resource"]["mimeType"], "text/plain");
    assert_eq!(resources[1]["resource"]["uri"], "file:///pic.png");
    assert_eq!(resources[1]["resource"]["mimeType"], "image/png");
    assert_eq!(
        resources[1]["resource"]["blob"],
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    );
    let files = &r.structured_content.unwrap()["files"];
    assert_eq!(files["out/r port.txt"], "HELLO");
    assert_eq!(files["b.bin"]["base64"], "/wA=");
    client.cancel().await.unwrap();
}

#[test]
fn names_that_are_traps_on_common_clients_are_refused() {
    let s = Server::start(&[]);
    for (files, says) in [
        (json!({"a\\b": "x"}), "contains a backslash"),
        (json!({"c:x": "x"}), "contains ':'"),
        (json!({"a\u{7}b": "x"}), "control character (U+0007)"),
        (json!({"a\nb": "x"}), "control character (U+000A)"),
        (
            json!({"z\u{202e}gnp.exe": "x"}),
            "direction-changing character (U+202E)",
        ),
        (json!({"CON": "x"}), "\"CON\" that Windows reserves"),
        (
            json!({"d/aux.txt": "x"}),
            "\"aux.txt\" that Windows reserves",
        ),
        (
            json!({"README": "1", "readme": "2"}),
            "file names \"README\" and \"readme\" differ only in case or Unicode form",
        ),
        (
            json!({"Caf\u{e9}": "1", "Cafe\u{301}": "2"}),
            "differ only in case or Unicode form",
        ),
        (json!({"x": "1", "x..": "2"}), "ends in a dot or a space"),
        (
            json!({"s.txt": "1", "\u{17f}.txt": "2"}),
            "differ only in case",
        ),
        (json!({"A": "1", "a/b": "2"}), "is also the folder of"),
    ] {
        let r = s.post_json(
            "/tools/python.execute",
            &json!({"code": "print(1)", "files": files}),
        );
        let v = r.json();
        assert_eq!(
            (r.status, v["error"]["code"].as_str()),
            (400, Some("invalid_input")),
            "{files}: {v}"
        );
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(says), "{says}: {msg}");
    }
    // `<>|?*"` fail to save on Windows but cannot point elsewhere: allowed.
    let out = s.exec("open('a<b>|?*.txt', 'w').write('ok')");
    assert_eq!(out["files"], json!({"a<b>|?*.txt": "ok"}), "{out}");

    // A script may still create such names (open() is CPython's); they are
    // not returned, each said so, and the rest comes back.
    let out = s.exec(
        "for n in ['a:b', 'x\\\\y', 'CON.txt', 'A.txt', 'a.txt', 'ok.txt']:\n    open(n, 'w').write(n)",
    );
    assert_eq!(
        out["files"],
        json!({"A.txt": "A.txt", "ok.txt": "ok.txt"}),
        "{out}"
    );
    let err = out["stderr"].as_str().unwrap();
    for says in [
        "[file \"a:b\" not returned: its name contains ':'",
        "[file \"x\\\\y\" not returned: its name contains a backslash",
        "[file \"CON.txt\" not returned: its name has a part \"CON.txt\" that Windows reserves",
        "[file \"a.txt\" not returned: its name differs from \"A.txt\" only in case or Unicode form]",
    ] {
        assert!(err.contains(says), "{says}\n{err}");
    }
}
