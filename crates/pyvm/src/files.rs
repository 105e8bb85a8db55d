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

use toolgate_core::files::Files;

/// CPython 3.13's `open` for the files a call gave, in Python: modes,
/// errors and their messages as CPython's, text through `TextIOWrapper`
/// (UTF-8 by default, universal newlines). A folder exists while a file is
/// under it. Checked against CPython on a real folder by
/// `tests/tests/files.rs`.
const FILES_PY: &str = r#"
from _io import BytesIO as _BytesIO, TextIOWrapper as _TextIOWrapper
from _io import UnsupportedOperation as _Unsupported

_store = {}
_given = {}
_open = []


def _reset(files):
    # In place: an object freed here would be the script's first of its kind.
    _store.clear()
    _store.update(files)
    _given.clear()
    _given.update(files)
    del _open[:]


def _collect():
    # What CPython's exit does: flush every file still open, text layer
    # first. A handle that wrote nothing saves nothing.
    for f in _open:
        try:
            if not f.closed:
                f.flush()
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
        if len(p.encode("utf-8", "surrogateescape")) > 255:
            if _is_dir("/".join(parts)):
                raise OSError(36, "File name too long", orig)
            raise FileNotFoundError(2, "No such file or directory", orig)
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
    def __init__(self, key, shown, mode, data, readable, writable, appending):
        super().__init__(data)
        self.name = shown
        self.mode = mode
        self._key = key
        self._readable = readable
        self._writable = writable
        self._appending = appending
        self._dirty = False

    def readable(self):
        super().readable()
        return self._readable

    def writable(self):
        super().writable()
        return self._writable

    def _check_read(self):
        if not self._readable:
            if self.closed:
                super().read(0)
            raise _Unsupported("read")

    def _check_write(self, op="write"):
        if not self._writable:
            if self.closed:
                super().write(b"")
            raise _Unsupported(op)

    def read(self, size=-1):
        self._check_read()
        return super().read(size)

    def read1(self, size=-1):
        self._check_read()
        return super().read1(size)

    def readinto(self, b):
        self._check_read()
        return super().readinto(b)

    def readline(self, size=-1):
        self._check_read()
        return super().readline(size)

    def readlines(self, hint=-1):
        self._check_read()
        return super().readlines(hint)

    def __next__(self):
        self._check_read()
        return super().__next__()

    def write(self, b):
        self._check_write()
        if self._appending:
            self.seek(0, 2)
        n = super().write(b)
        self._dirty = True
        return n

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def truncate(self, size=None):
        self._check_write("truncate")
        n = super().truncate(size)
        self._dirty = True
        return n

    def _save(self):
        if self._dirty and not self.closed:
            _store[self._key] = self.getvalue()
            self._dirty = False

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
    if isinstance(file, str) and file.endswith("/"):
        # A folder is asked for: writing one is EISDIR, reading a file as
        # one ENOTDIR, as the kernel answers.
        if not reading:
            raise IsADirectoryError(21, "Is a directory", file)
        if key in _store:
            raise NotADirectoryError(20, "Not a directory", file)
    exists = key in _store
    if reading and not exists:
        raise FileNotFoundError(2, "No such file or directory", file)
    if not _is_dir(key.rpartition("/")[0]):
        raise FileNotFoundError(2, "No such file or directory", file)
    if creating and exists:
        raise FileExistsError(17, "File exists", file)
    shown = file
    if not isinstance(file, (str, bytes, int)):
        shown = type(file).__fspath__(file)
    data = b"" if (writing or creating) else _store.get(key, b"")
    readable = reading or updating
    writable = not reading or updating
    raw_mode = mode.replace("t", "")
    if "b" not in raw_mode:
        raw_mode += "b"
    raw = _File(key, shown, raw_mode, data, readable, writable, appending)
    if writing or creating or appending:
        _store[key] = data
    if binary:
        if writable:
            _open.append(raw)
        return raw
    f = _TextIOWrapper(raw, encoding=encoding or "UTF-8", errors=errors, newline=newline)
    f.mode = mode
    if writable:
        _open.append(f)
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

    /// The files the script created or changed, its open files flushed,
    /// and how many it named in a way no file system can hold (a lone
    /// surrogate). What the script left in the store that is not a name
    /// and bytes is not a file.
    pub fn collect(&self, vm: &VirtualMachine) -> (Files, usize) {
        let mut out = Files::new();
        let mut unnamed = 0;
        let Ok(d) = self.collect.call((), vm) else {
            return (out, unnamed);
        };
        let Some(d) = d.downcast_ref::<PyDict>() else {
            return (out, unnamed);
        };
        for (k, v) in d {
            let (Some(name), Some(bytes)) = (
                k.downcast_ref::<rustpython_vm::builtins::PyStr>()
                    .and_then(|s| s.to_str().map(str::to_owned)),
                v.downcast_ref::<PyBytes>(),
            ) else {
                unnamed += 1;
                continue;
            };
            out.insert(name, bytes.as_bytes().to_vec());
        }
        (out, unnamed)
    }
}
