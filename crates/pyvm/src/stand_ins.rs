//! What the sandbox puts where the host was: `sys.stdout`/`sys.stderr`
//! writing to the run's sink, no `stdin`, and an `os` with no operating
//! system behind it (Lib's `_dummy_os`, with `urandom` from getrandom).

use std::borrow::Cow;

use rustpython_vm::{
    PyObjectRef, PyResult, VirtualMachine,
    builtins::{PyStr, PyStrRef},
    compiler::Mode,
    scope::Scope,
};

use super::vm::{Stream, emit};

const STREAMS_PY: &str = r#"
class _Stream:
    encoding = "utf-8"
    errors = "strict"
    def __init__(self, n, name):
        self._n = n
        self.name = name
    def write(self, s):
        # Each stream's own write, in Rust (install).
        return self.__dict__["write"](s)
    def writelines(self, lines):
        for s in lines:
            self.write(s)
    def flush(self):
        pass
    def isatty(self):
        return False
    def writable(self):
        return True
    def readable(self):
        return False
stdout = _Stream(1, "<stdout>")
stderr = _Stream(2, "<stderr>")
"#;

/// Installs the stand-ins; before anything imports `os` or prints.
pub(super) fn install(vm: &VirtualMachine) -> PyResult<()> {
    // `random`, `tempfile`-free `inspect` and friends import `os`; Lib's
    // `_dummy_os` stands in for it, plus a native `urandom`.
    let os = vm.import("_dummy_os", 0)?;
    os.set_attr("urandom", vm.new_function("urandom", urandom), vm)?;
    // `_dummy_os` answers every unknown name with a function that *returns*
    // an exception; make them absent instead, so `os.getcwd()` fails.
    os.set_attr(
        "__getattr__",
        vm.new_function("__getattr__", no_os_attr),
        vm,
    )?;

    // Capture stdout/stderr through a writer that sends to the run's sink.
    let ns = vm.ctx.new_dict();
    let code = vm
        .compile(STREAMS_PY, Mode::Exec, "<toolgate>")
        .map_err(|e| e.into_pyexception(vm, Some(STREAMS_PY)))?;
    vm.run_code_obj(code, Scope::with_builtins(None, ns.clone(), vm))?;
    for (name, n) in [("stdout", 1), ("stderr", 2)] {
        let stream = ns.get_item(name, vm)?;
        // The class's `write` in Rust, as the instance's own: `print` calls
        // it once per piece, and a Python frame per piece was half of what
        // printing cost (2,000 `print(i)`: 4.3 -> 2.2 ms in the child).
        let write = move |s: PyObjectRef, vm: &VirtualMachine| write_checked(n, s, vm);
        stream.set_attr("write", vm.new_function("write", write), vm)?;
        vm.sys_module.set_attr(name, stream, vm)?;
    }
    vm.sys_module.set_attr("stdin", vm.ctx.none(), vm)?;
    Ok(())
}

fn urandom(n: isize, vm: &VirtualMachine) -> PyResult<Vec<u8>> {
    let n = usize::try_from(n).map_err(|_| vm.new_value_error("negative argument not allowed"))?;
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).map_err(|e| vm.new_os_error(format!("urandom: {e}")))?;
    Ok(buf)
}

fn no_os_attr(name: PyStrRef, vm: &VirtualMachine) -> PyResult {
    Err(vm.new_attribute_error(format!(
        "module 'os' has no attribute '{}': the sandbox has no operating system",
        name.to_string_lossy()
    )))
}

/// `_Stream.write`: only a str, whose length it returns.
fn write_checked(n: i32, s: PyObjectRef, vm: &VirtualMachine) -> PyResult<usize> {
    let s = s.downcast::<PyStr>().map_err(|other| {
        vm.new_type_error(format!(
            "write() argument must be str, not {}",
            other.class().name()
        ))
    })?;
    let len = s.char_len();
    write_native(n, s);
    Ok(len)
}

fn write_native(n: i32, s: PyStrRef) {
    let stream = if n == 2 {
        Stream::Stderr
    } else {
        Stream::Stdout
    };
    let text: Cow<'_, str> = match s.to_str() {
        Some(t) => Cow::Borrowed(t),
        None => s.to_string_lossy(),
    };
    emit(stream, &text);
}
