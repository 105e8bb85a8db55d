//! The script's files (docs/contracts.md#files): `open` over an in-memory
//! store that the call fills and reads back. Nothing reaches the host: the
//! interpreter still has no file I/O (`_io.FileIO` is not compiled in), and
//! the kernel walls around the process do not change.

use rustpython_vm::{
    PyObjectRef, PyResult, VirtualMachine,
    builtins::{PyBytes, PyDict},
    compiler::Mode,
    scope::Scope,
};

use crate::files::Files;

/// CPython 3.13's `open` for the files a call gave, in Python: modes,
/// errors and their messages as CPython's, text through `TextIOWrapper`
/// (UTF-8 by default, universal newlines). A folder exists while a file is
/// under it. Checked against CPython on a real folder by
/// `tests/tests/files.rs`.
const FILES_PY: &str = r#"
from _io import BytesIO as _BytesIO, TextIOWrapper as _TextIOWrapper

_store = {}
_given = {}
_open = []


def _reset(files):
    global _store, _given, _open
    _store = dict(files)
    _given = dict(files)
    _open = []


def _collect():
    for f in _open:
        try:
            f._save()
        except BaseException:
            pass
    return {k: v for k, v in _store.items()
            if isinstance(k, str) and isinstance(v, bytes) and _given.get(k) != v}


def _key(file):
    # The store's name for `file`, walked as the kernel walks a path; None
    # outside the store (absolute, or above it): no such file there.
    orig = file
    if isinstance(file, bytes):
        file = file.decode("utf-8", "surrogateescape")
    elif not isinstance(file, str):
        fspath = getattr(type(file), "__fspath__", None)
        if fspath is None:
            if isinstance(file, int):
                raise OSError(9, "Bad file descriptor")
            raise TypeError("expected str, bytes or os.PathLike object, not "
                            + type(file).__name__)
        file = fspath(file)
        if isinstance(file, bytes):
            file = file.decode("utf-8", "surrogateescape")
    if "\0" in file:
        raise ValueError("embedded null byte")
    if file == "":
        raise FileNotFoundError(2, "No such file or directory", orig)
    if file.startswith("/"):
        return None
    parts = []
    for p in file.split("/"):
        if p in ("", "."):
            continue
        if parts:
            here = "/".join(parts)
            if here in _store:
                raise NotADirectoryError(20, "Not a directory", orig)
            if p == ".." and not _is_dir(here):
                raise FileNotFoundError(2, "No such file or directory", orig)
        if p == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(p)
    return "/".join(parts)


def _is_dir(key):
    if key == "":
        return True
    prefix = key + "/"
    return any(k.startswith(prefix) for k in _store)


class _File(_BytesIO):
    def __init__(self, key, shown, mode, data, writable):
        super().__init__(data)
        self.name = shown
        self.mode = mode
        self._key = key
        self._writable = writable

    def _save(self):
        if self._writable and not self.closed:
            _store[self._key] = self.getvalue()

    def flush(self):
        super().flush()
        self._save()

    def close(self):
        self._save()
        super().close()

    def __repr__(self):
        if "+" in self.mode:
            kind = "BufferedRandom"
        elif self._writable:
            kind = "BufferedWriter"
        else:
            kind = "BufferedReader"
        return "<_io.%s name=%r>" % (kind, self.name)


def open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None,
         closefd=True, opener=None):
    if not isinstance(mode, str):
        raise TypeError("open() argument 'mode' must be str, not " + type(mode).__name__)
    modes = set(mode)
    if modes - set("axrwb+t") or len(mode) > len(modes):
        raise ValueError("invalid mode: %r" % mode)
    creating = "x" in modes
    reading = "r" in modes
    writing = "w" in modes
    appending = "a" in modes
    updating = "+" in modes
    text = "t" in modes
    binary = "b" in modes
    if text and binary:
        raise ValueError("can't have text and binary mode at once")
    if creating + reading + writing + appending > 1:
        raise ValueError("must have exactly one of create/read/write/append mode")
    if not (creating or reading or writing or appending):
        raise ValueError("Must have exactly one of create/read/write/append mode "
                         "and at most one plus")
    if binary and encoding is not None:
        raise ValueError("binary mode doesn't take an encoding argument")
    if binary and errors is not None:
        raise ValueError("binary mode doesn't take an errors argument")
    if binary and newline is not None:
        raise ValueError("binary mode doesn't take a newline argument")
    key = _key(file)
    if key is None:
        raise FileNotFoundError(2, "No such file or directory", file)
    if _is_dir(key):
        raise IsADirectoryError(21, "Is a directory", file)
    exists = key in _store
    if reading and not exists:
        raise FileNotFoundError(2, "No such file or directory", file)
    if not _is_dir(key.rpartition("/")[0]):
        raise FileNotFoundError(2, "No such file or directory", file)
    if creating and exists:
        raise FileExistsError(17, "File exists", file)
    data = b"" if (writing or creating) else _store.get(key, b"")
    writable = not reading or updating
    raw_mode = mode.replace("t", "")
    if "b" not in raw_mode:
        raw_mode += "b"
    raw = _File(key, file, raw_mode, data, writable)
    if writing or creating or appending:
        _store[key] = data
    if appending:
        raw.seek(0, 2)
    if writable:
        _open.append(raw)
    if binary:
        return raw
    f = _TextIOWrapper(raw, encoding=encoding or "utf-8", errors=errors, newline=newline)
    f.mode = mode
    return f

open.__module__ = "_io"
"#;

/// The store's two entry points, kept from warm-up.
pub(super) struct FileStore {
    reset: PyObjectRef,
    collect: PyObjectRef,
}

impl FileStore {
    /// Defines the store and makes its `open` the builtin one.
    pub fn install(vm: &VirtualMachine) -> PyResult<Self> {
        let ns = vm.ctx.new_dict();
        let code = vm
            .compile(FILES_PY, Mode::Exec, "<toolgate-files>")
            .map_err(|e| e.into_pyexception(vm, Some(FILES_PY)))?;
        vm.run_code_obj(code, Scope::with_builtins(None, ns.clone(), vm))?;
        vm.builtins.set_attr("open", ns.get_item("open", vm)?, vm)?;
        Ok(Self {
            reset: ns.get_item("_reset", vm)?,
            collect: ns.get_item("_collect", vm)?,
        })
    }

    /// Fills the store with the call's files (none: an empty store).
    pub fn reset(&self, vm: &VirtualMachine, files: &Files) -> PyResult<()> {
        let d = vm.ctx.new_dict();
        for (name, bytes) in files {
            d.set_item(name.as_str(), vm.ctx.new_bytes(bytes.clone()).into(), vm)?;
        }
        self.reset.call((d,), vm).map(drop)
    }

    /// The files the script created or changed, its open files flushed.
    /// What the script left in the store that is not a name and bytes is
    /// not a file, and is skipped.
    pub fn collect(&self, vm: &VirtualMachine) -> Files {
        let mut out = Files::new();
        let Ok(d) = self.collect.call((), vm) else {
            return out;
        };
        let Some(d) = d.downcast_ref::<PyDict>() else {
            return out;
        };
        for (k, v) in d {
            let (Some(name), Some(bytes)) = (
                k.downcast_ref::<rustpython_vm::builtins::PyStr>()
                    .and_then(|s| s.to_str().map(str::to_owned)),
                v.downcast_ref::<PyBytes>(),
            ) else {
                continue;
            };
            out.insert(name, bytes.as_bytes().to_vec());
        }
        out
    }
}
