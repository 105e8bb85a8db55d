# A session's globals, carried between calls (docs/contracts.md#sessions).
# Runs only inside the sealed child: `_save` pickles the script's globals
# after a call, `_load` restores them before the next. Functions and classes
# the script defined travel by value: a function as the place of its code in
# a source the session compiled (recompiled on restore, so no code object is
# ever built from bytes), a class as its metaclass, bases and namespace.
# Everything a module holds travels by name.
#
# A state is segments of pickles, each with its own memo. A call restores
# nothing until the script first needs a value (the interpreter's
# `lazy_globals`): until then each name holds a placeholder, and a call that
# never needs one saves the old pickles again as they were, plus a segment
# for what it defined. Names it rebound or deleted stay in their segment,
# unbound, so that the memo stays whole, until a full save drops them.
# Only a state whose restore runs none of the script's code is restored
# lazily (each pickle records whether it does): otherwise when the restore
# ran, and what the script changed first, would show.
import _pickle
from copyreg import dispatch_table as _dispatch_table
from gc import (disable as _gc_disable, enable as _gc_enable, isenabled as _gc_isenabled,
                collect as _gc_collect, freeze as _gc_freeze, get_count as _gc_get_count)
import builtins as _builtins
import sys as _sys
import types as _types
from _io import BytesIO as _BytesIO

_VERSION = 2  # 1: one segment, and no dead entries
_FunctionType = _types.FunctionType
_CellType = _types.CellType
_ModuleType = _types.ModuleType
_BuiltinTypes = (_types.BuiltinFunctionType, _types.BuiltinMethodType)
_EMPTY = object()
_SKIP = frozenset(("__builtins__", "__name__"))
_NOT_GLOBAL = frozenset((
    "__dict__", "__weakref__", "_abc_impl",
    # Annotations are carried evaluated, as `__annotations__`.
    "__annotate__", "__annotate_func__", "__annotations_cache__", "__annotations__"))
# What type() makes for a class's own attributes: made again on restore.
_DESCRIPTORS = (_types.GetSetDescriptorType, _types.MemberDescriptorType)

# Sources compiled while a session call runs: [source, filename, mode] and
# the code compile() gave (or None until a restore needs it).
_sources = []
_roots = []
_index = {}  # id(code) -> (source index, path through co_consts)
_module_code = {}  # id(code) -> (module, qualname, path): code a module defined
_modules_indexed = [False]
_indexed = [0]
_target = [None]  # the globals a restore fills and functions bind to
_compile = _builtins.compile
_well_known = {}  # id(object) -> (module, attribute), built at warm-up


def _know_modules(allowed, forbidden):
    # Every object a loaded module exposes, by identity: sentinels such as
    # dataclasses.MISSING come back as themselves, and types that are not
    # where their name says (types.MethodType) are found. Run last in the
    # warm-up, after the scrub and the walls: a script reaches this table
    # (as it reaches sys.modules through typing), so it must hold nothing
    # the walls took away.
    _allowed.update(allowed)
    for name, m in list(_sys.modules.items()):
        top = name.partition(".")[0]
        if type(m) is not _ModuleType or name.startswith("_toolgate") or top in forbidden or top in _HIDDEN:
            continue
        for attr, v in list(vars(m).items()):
            if attr.startswith("__") or type(v) in (int, float, str, bytes, bool, tuple, list, dict):
                continue
            _well_known.setdefault(id(v), (name, attr))
            _keep.append(v)


_keep = []
_allowed = set()  # the allowlist: modules a state may name as values
# The interpreter's machinery, never named by a state.
_HIDDEN = frozenset(("_imp", "marshal", "gc", "sys", "_frozen_importlib", "_frozen_importlib_external"))
_SOURCES_MAX = 16 << 20  # source text a session call records, in all
_recorded = [0]


def _register(source, filename, mode, code, flags=0, optimize=-1):
    # Past the cap, code compiled from more text is simply not carried (its
    # functions are named as such), so recording never costs unbounded memory.
    _recorded[0] += len(source)
    if _recorded[0] > _SOURCES_MAX:
        return
    _sources.append([source, filename, mode, flags, optimize])
    _roots.append(code)


_current = [None]  # the running script's source


def _register_script(source, filename, code):
    _current[0] = len(_sources)
    _register(source, filename, "exec", code)


def _source_line(code, lineno):
    # The line a traceback shows for `code` when an earlier call's script
    # defined it; None for the running script's own code (or unknown).
    loc = _locate(code)
    if loc is None or loc[0] == _current[0]:
        return None
    src = _sources[loc[0]][0]
    if type(src) is bytes:
        src = src.decode("utf-8", "replace")
    lines = src.splitlines()
    return lines[lineno - 1] if 0 < lineno <= len(lines) else ""


class _Unrestored:
    # A saved value not restored yet; the interpreter restores every one
    # when a script first reads one (or the whole namespace).
    __slots__ = ()

    def __repr__(self):
        return "<session value not restored>"


# In a list: the interpreter treats any read of a name holding the
# placeholder as a read of an unrestored value, this module's own included.
_PENDING = [_Unrestored()]
_lazy = [None]  # the _Unread state of this call, until it is restored
# A full save once dead pickles (or the sources added since the last full
# save) outweigh live ones, or segments pile up.
_SEGMENTS_MAX = 8
_DEAD_MIN = 64 << 10
# Dunders the interpreter reads from a namespace itself (imports, warnings):
# a state that holds one is restored before the script.
_EAGER = frozenset(("__warningregistry__", "__package__", "__spec__", "__loader__",
                    "__file__", "__path__", "__cached__"))
_PLAIN = frozenset((dict, list, tuple, set, frozenset, str, bytes, bytearray,
                    int, float, complex, bool, type(None)))
_impure = [False]  # a value being saved runs the script's code when restored


class _Unread:
    # A saved state this call has not restored (all or part of it).
    __slots__ = ("body", "segments", "starts", "status", "where", "bind", "base", "old_sources",
                 "pure")


def _start():
    _lazy[0] = None
    del _sources[:], _roots[:]
    _index.clear()
    _indexed[0] = 0
    _target[0] = None
    _current[0] = None
    _recorded[0] = 0


def _walk(code, i, path):
    _index[id(code)] = (i, path)
    for n, c in enumerate(code.co_consts):
        if type(c) is type(code):
            _walk(c, i, path + (n,))


def _locate(code):
    while _indexed[0] < len(_roots):
        i = _indexed[0]
        if _roots[i] is not None:
            _walk(_roots[i], i, ())
        _indexed[0] += 1
    return _index.get(id(code))


def _index_modules():
    # Code the loaded modules define, by the function that holds it: a
    # function a library makes at run time (namedtuple's `_make`) has its
    # code there.
    seen = set()

    def walk(code, where, path):
        _module_code.setdefault(id(code), (where[0], where[1], path))
        for n, c in enumerate(code.co_consts):
            if type(c) is type(code):
                walk(c, where, path + (n,))

    def visit(obj, module, qualname, depth):
        if id(obj) in seen or depth > 3:
            return
        seen.add(id(obj))
        if type(obj) is _FunctionType:
            walk(obj.__code__, (module, qualname), ())
        elif isinstance(obj, type):
            for k, v in list(vars(obj).items()):
                if type(v) in (classmethod, staticmethod):
                    v = v.__func__
                if type(v) is _FunctionType or isinstance(v, type):
                    visit(v, module, qualname + "." + k, depth + 1)

    for name, m in list(_sys.modules.items()):
        if type(m) is not _ModuleType or name.startswith("_toolgate"):
            continue
        for attr, v in list(vars(m).items()):
            if getattr(v, "__module__", None) == name:
                visit(v, name, attr, 0)
    _modules_indexed[0] = True


def _module_code_of(module, qualname, path):
    code = _global(module, qualname).__code__
    for n in path:
        code = code.co_consts[n]
    return code


def _code(i, path, qualname=None, firstlineno=None):
    root = _roots[i]
    if root is None:
        src, filename, mode, flags, optimize = _sources[i]
        root = _roots[i] = _compile(src, filename, mode, flags, True, optimize)
        if i < _indexed[0]:
            _walk(root, i, ())
    for n in path:
        root = root.co_consts[n]
    if qualname is not None and (root.co_qualname, root.co_firstlineno) != (qualname, firstlineno):
        # Compiled again, the source gave other code: never run the wrong body.
        raise _pickle.UnpicklingError("%s compiled to other code than it was saved from" % qualname)
    return root


def _lookup(module, qualname):
    m = _sys.modules.get(module)
    if m is None:
        return None
    obj = m
    for part in qualname.split("."):
        if part == "<locals>":
            return None
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _global(module, qualname):
    # Only what a loaded module exposes; never a dunder on the way.
    for part in qualname.split("."):
        if part.startswith("__") and part.endswith("__") and part not in ("__newobj__", "__newobj_ex__"):
            raise _pickle.UnpicklingError("refused global %s.%s" % (module, qualname))
    obj = _lookup(module, qualname)
    if obj is None:
        raise _pickle.UnpicklingError("no global %s.%s" % (module, qualname))
    return obj


def _by_name(obj):
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and module != "__main__":
        if _lookup(module, qualname) is obj:
            return (_global, (module, qualname))
    known = _well_known.get(id(obj))
    if known is not None:
        return (_global, known)
    return None


def _import_module(name):
    # Through the import guard: a module the allowlist no longer admits
    # fails to restore.
    _builtins.__import__(name)
    return _sys.modules[name]


def _make_cell():
    return _CellType()


def _set_cell(cell, value):
    if value is not _EMPTY:
        cell.cell_contents = value
    return cell


def _globals_of(f):
    # The script's namespace, a loaded module's (by name), or a dict of the
    # function's own (by value).
    g = f.__globals__
    if g is _target[0]:
        return None
    name = g.get("__name__")
    m = _sys.modules.get(name) if type(name) is str else None
    if m is not None and getattr(m, "__dict__", None) is g:
        return name
    # exec() put the builtins in it: they are the restoring call's.
    copy = _own_globals.get(id(g))
    if copy is None:
        copy = {k: v for k, v in g.items() if k != "__builtins__"}
        _own_globals[id(g)] = copy
        _keep_alive.append(g)
    return (copy,)


_own_globals = {}
_keep_alive = []


def _make_function(code, globs, name, closure):
    if globs is None:
        globs = _target[0]
    elif type(globs) is str:
        globs = vars(_sys.modules[globs])
    else:
        globs = globs[0]
        globs.setdefault("__builtins__", _builtins.__dict__)
    how, where = code
    if how is not _code and how is not _module_code_of:
        raise _pickle.UnpicklingError("refused code")
    return _FunctionType(how(*where), globs, name, None, closure)


def _set_function(f, state):
    for k, v in state.items():
        setattr(f, k, v)
    return f


def _make_class(meta, name, bases, qualname, extra):
    ns = meta.__prepare__(name, bases)
    ns["__module__"] = "__main__"
    ns["__qualname__"] = qualname
    for k, v in extra:
        ns[k] = v
    return meta(name, bases, ns)


def _set_class(cls, attrs):
    for k, v in attrs:
        setattr(cls, k, v)
    return cls


def _used_index(i):
    j = _used.get(i)
    if j is None:
        j = _used[i] = len(_used)
    return j


def _reduce_function(f):
    loc = _locate(f.__code__)
    if loc is None:
        if not _modules_indexed[0]:
            _index_modules()
        where = _module_code.get(id(f.__code__))
        if where is None:
            raise _pickle.PicklingError(
                "function %s was not compiled by the session" % f.__qualname__)
        code = (_module_code_of, where)
    else:
        code = (_code, (_used_index(loc[0]), loc[1], f.__code__.co_qualname, f.__code__.co_firstlineno))
    state = {
        "__qualname__": f.__qualname__,
        "__module__": f.__module__,
        "__doc__": f.__doc__,
        "__defaults__": f.__defaults__,
        "__kwdefaults__": f.__kwdefaults__,
        "__dict__": f.__dict__,
    }
    try:
        ann = f.__annotations__
    except Exception:
        ann = None
    if ann:
        state["__annotations__"] = dict(ann)
    return (_make_function,
            (code, _globals_of(f), f.__name__, f.__closure__),
            state, None, None, _set_function)


def _reduce_class(cls):
    meta = type(cls)
    extra = []
    d = vars(cls)
    slots = d.get("__slots__")
    if slots is not None:
        extra.append(("__slots__", slots))
        slots = (slots,) if isinstance(slots, str) else tuple(slots)
    else:
        slots = ()
    members = getattr(cls, "_member_names_", None)
    if members is not None and "_member_map_" in d:
        # An enum: its members must exist when its metaclass runs.
        for m in d.get("_member_names_", ()):
            extra.append((m, cls._member_map_[m]._value_))
        # What the metaclass made (sunder names, __new__) it makes again;
        # the user's hooks among them are set back after.
        skip = set(d.get("_member_names_", ())) | {"__new__"}
        skip.update(k for k in d if k[:1] == "_" and k[-1:] == "_" and k[:2] != "__"
                    and k not in ("_missing_", "_generate_next_value_"))
    else:
        skip = ()
    attrs = []
    if any(k in d for k in ("__annotations__", "__annotate_func__", "__annotate__")):
        try:
            attrs.append(("__annotations__", dict(cls.__annotations__)))
        except Exception:
            pass
    for k, v in d.items():
        if k in _NOT_GLOBAL or k in skip or k in ("__module__", "__qualname__", "__slots__"):
            continue
        if k in slots or isinstance(v, _DESCRIPTORS):
            continue
        attrs.append((k, v))
    return (_make_class, (meta, cls.__name__, cls.__bases__, cls.__qualname__, extra),
            attrs, None, None, _set_class)


# What the script may have made restoring run: a class's own hooks, and
# an instance's own reducers.
_HOOKS = ("__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__getnewargs_ex__",
          "__getnewargs__", "__new__", "__init__", "__set_name__", "__init_subclass__")
_script_types = {}  # id(type) -> whether restoring its instances may run the script's code


def _script_made(f):
    return getattr(f, "__module__", None) == "__main__" or type(f) is _FunctionType and _locate(f.__code__) is not None


def _runs_script_code(obj, t):
    # Whether restoring `obj` may run code the script wrote: a class carried
    # by value (its metaclass, `__init_subclass__`, `__set_name__` run), an
    # instance of one, of a class whose restoring hooks the script set, or
    # with reducers of its own. Functions carried by value only compile.
    if isinstance(obj, type):
        return obj not in _PLAIN and _by_name(obj) is None
    if t in (_FunctionType, _CellType, _ModuleType, classmethod, staticmethod, property,
             _types.MethodType, _types.MappingProxyType) or t in _BuiltinTypes:
        return False
    r = _script_types.get(id(t))
    if r is None:
        r = _by_name(t) is None or any(_script_made(getattr(t, h, None)) for h in _HOOKS)
        _script_types[id(t)] = r
        _keep_alive.append(t)
    if r:
        return True
    d = getattr(obj, "__dict__", None)
    return type(d) is dict and ("__reduce_ex__" in d or "__reduce__" in d)


class _Pickler(_pickle.Pickler):
    def reducer_override(self, obj):
        t = type(obj)
        if t not in _PLAIN and not _impure[0] and _runs_script_code(obj, t):
            _impure[0] = True
        if t is _Unrestored:
            raise _pickle.PicklingError("a session value that was not restored")
        if t is _FunctionType:
            if id(obj) in _OWN:
                return NotImplemented
            return _by_name(obj) or _reduce_function(obj)
        if isinstance(obj, type):
            return _by_name(obj) or _reduce_class(obj)
        if t is _ModuleType:
            if obj.__name__.partition(".")[0] not in _allowed:
                raise _pickle.PicklingError(
                    "module %r is not one a script may import" % (obj.__name__,))
            return (_import_module, (obj.__name__,))
        if t is _CellType:
            try:
                v = obj.cell_contents
            except ValueError:
                v = _EMPTY
            return (_make_cell, (), v, None, None, _set_cell)
        if t in _BuiltinTypes:
            r = _by_name(obj)
            if r is not None:
                return r
            owner = getattr(obj, "__self__", None)
            if owner is not None and type(owner) is not _ModuleType:
                return (getattr, (owner, obj.__name__))
            raise _pickle.PicklingError("cannot carry %r" % (obj,))
        if t is classmethod or t is staticmethod:
            return (t, (obj.__func__,))
        if t is property:
            return (property, (obj.fget, obj.fset, obj.fdel, obj.__doc__))
        if t is _types.MappingProxyType:
            return (_types.MappingProxyType, (dict(obj),))
        if t is _types.MethodType:
            return (_types.MethodType, (obj.__func__, obj.__self__))
        known = _well_known.get(id(obj))
        if known is not None:
            return (_global, known)
        return NotImplemented


_used = {}


class _Unpickler(_pickle.Unpickler):
    def find_class(self, module, name):
        # A saved state names only this module's restorers: everything else
        # comes through `_global`, which walks loaded modules only.
        if module == __name__ and name in _RESTORERS:
            return _RESTORERS[name]
        raise _pickle.UnpicklingError("refused global %s.%s" % (module, name))


_RESTORERS = {
    f.__name__: f for f in (
        _global, _import_module, _make_cell, _set_cell, _make_function,
        _set_function, _make_class, _set_class, _code, _module_code_of)
}
_OWN = frozenset(id(f) for f in _RESTORERS.values())


def _why(e):
    try:
        text = str(e)
    except BaseException:
        text = ""
    if type(text) is not str or not text:
        return type(e).__name__
    return text.splitlines()[0][:200]


def _dump_each(values):
    # One pickler for every name, so that what two names share stays shared;
    # each name's pickle is separate, so one that fails to load loses only
    # itself. Returns the concatenated pickles and their lengths.
    buf = _BytesIO()
    p = _Pickler(buf, 4)
    sizes = []
    for v in values.values():
        start = buf.tell()
        _impure[0] = False
        p.dump(v)
        sizes.append((buf.tell() - start, not _impure[0]))
    return buf.getvalue(), sizes


def _dump_checked(values):
    # (body, sizes, dropped): what cannot be carried is found one name at a
    # time and dropped; the rest is carried.
    dropped = []
    mark = dict(_used)
    try:
        body, sizes = _dump_each(values)
    except BaseException:
        for k in list(values):
            try:
                _Pickler(_BytesIO(), 4).dump(values[k])
            except BaseException as e:
                dropped.append((k, _why(e)))
                del values[k]
        _used.clear()
        _used.update(mark)
        try:
            body, sizes = _dump_each(values)
        except BaseException as e:
            dropped.extend((k, _why(e)) for k in values)
            values.clear()
            _used.clear()
            _used.update(mark)
            body, sizes = b"", []
    return body, sizes, dropped


def _head(sources, segments, base):
    head = _BytesIO()
    _pickle.Pickler(head, 4).dump((_VERSION, sources, segments, base))
    head = head.getvalue()
    return len(head).to_bytes(4, "little") + head


def _entries(values, sizes):
    return [(k, n, pure) for k, (n, pure) in zip(values, sizes)]


def _should_compact():
    # Whether a save that restored nothing must restore all first: a value
    # it leaves dead would run the script's code when loaded for the memo,
    # its dead pickles (or the sources added since the last full save)
    # would outweigh the live ones, or it would add one segment too many.
    st = _lazy[0]
    if st is None:
        return False
    globs = _target[0]
    p = _PENDING[0]
    dead = live = 0
    for seg in st.segments:
        for name, size, pure in seg:
            if name is not None and globs.get(name) is p:
                live += size
            elif not pure:
                return True
            else:
                dead += size
    # Saved sources added since the last full save (this call's come next time).
    fresh = sum(len(s[0]) for s in _sources[st.base:st.old_sources])
    return (len(st.segments) >= _SEGMENTS_MAX
            or dead > max(live, _DEAD_MIN) or fresh > max(live, _DEAD_MIN))


def _save(globs):
    # Returns (state bytes, [(name, why it was not carried)]). Runs with
    # the restore hook still installed: a `__getstate__` may read a name
    # not restored yet.
    _target[0] = globs
    p = _PENDING[0]
    _used.clear()
    _script_types.clear()
    st = _lazy[0]
    if st is not None:
        # Nothing was restored: the old sources keep their places, the old
        # pickles are kept as they are, and this call's values follow in a
        # segment of their own (they cannot share an object with the old
        # ones, which never existed in this process).
        for i in range(st.old_sources):
            _used[i] = i
    def carried():
        return {k: v for k, v in globs.items() if type(k) is str and k not in _SKIP and v is not p}

    values = carried()
    body_new, sizes, dropped = _dump_checked(values)
    if st is not None and _lazy[0] is None:
        # Saving this call's values restored the state: save it all.
        st = None
        _used.clear()
        values = carried()
        body_new, sizes, dropped = _dump_checked(values)
    if _dispatch_table and any(_script_made(f) for f in list(_dispatch_table.values())):
        # Reducers the script registered may run its code at restore.
        sizes = [(n, False) for n, _ in sizes]
    _script_types.clear()
    _own_globals.clear()
    del _keep_alive[:]
    sources = [None] * len(_used)
    for i, j in _used.items():
        sources[j] = _sources[i]
    _used.clear()
    if st is None:
        return _head(sources, [_entries(values, sizes)], len(sources)) + body_new, dropped
    kept, parts = [], []
    for i, seg in enumerate(st.segments):
        entries = [(name if name is not None and globs.get(name) is p else None, n, pure)
                   for name, n, pure in seg]
        if any(name is not None for name, _, _ in entries):
            kept.append(entries)
            parts.append(st.body[st.starts[i]:st.starts[i + 1]])
    if values:
        kept.append(_entries(values, sizes))
        parts.append(body_new)
    return b"".join([_head(sources, kept, st.base), *parts]), dropped


class _PlainUnpickler(_pickle.Unpickler):
    # The header is plain data: it names nothing.
    def find_class(self, module, name):
        raise _pickle.UnpicklingError("refused global %s.%s" % (module, name))


def _read_head(blob):
    # (sources, segments, base) of a saved state, checked: it is untrusted.
    n = int.from_bytes(blob[:4], "little")
    head = _PlainUnpickler(_BytesIO(blob[4:4 + n])).load()
    if type(head) is not tuple or not head:
        raise ValueError("its header is not one")
    if head[0] == 1 and len(head) == 3:
        # One segment of (name, size), every value taken as impure.
        _, sources, names = head
        if type(names) is not list:
            raise ValueError("its header is not one")
        segments = [[e + (False,) if type(e) is tuple else e for e in names]]
        base = len(sources) if type(sources) is list else 0
    elif head[0] == _VERSION and len(head) == 4:
        _, sources, segments, base = head
    else:
        raise ValueError("it was saved by another version of Toolgate")
    if type(sources) is not list or type(segments) is not list or type(base) is not int:
        raise ValueError("its header is not one")
    for s in sources:
        if type(s) is not list or len(s) != 5:
            raise ValueError("it names a source that is not one")
        src, filename, mode, flags, optimize = s
        if (type(src) not in (str, bytes) or type(filename) is not str
                or mode not in ("exec", "eval", "single")
                or type(flags) is not int or type(optimize) is not int):
            raise ValueError("it names a source that is not one")
    if not 0 <= base <= len(sources):
        raise ValueError("its header is not one")
    for seg in segments:
        if type(seg) is not list:
            raise ValueError("its header is not one")
        for e in seg:
            if (type(e) is not tuple or len(e) != 3 or type(e[1]) is not int or e[1] < 0
                    or (e[0] is not None and (type(e[0]) is not str or e[0] in _SKIP))
                    or type(e[2]) is not bool):
                raise ValueError("its header is not one")
    # A view, not a copy: a call that restores nothing passes the pickles
    # on with one copy fewer, and a fresh megabyte costs its page faults.
    return sources, segments, base, memoryview(blob)[4 + n:]


def _load(globs, blob):
    # Starts a call from a saved state: registers its sources, then either
    # binds each name to the placeholder (returns None) or, when restoring
    # would show (see below), fills `globs` (returns [(name, why it was not
    # restored)]). A state that cannot be read at all raises.
    _target[0] = globs
    sources, segments, base, body = _read_head(blob)
    st = _Unread()
    st.starts = [0]
    for seg in segments:
        st.starts.append(st.starts[-1] + sum(e[1] for e in seg))
    if st.starts[-1] != len(body):
        raise ValueError("its pickles are not the length its header gives")
    for s in sources:
        # Outside `_register`'s cap: the saved indices must stay in place.
        _recorded[0] += len(s[0])
        _sources.append(s)
        _roots.append(None)
    st.body, st.segments, st.base, st.old_sources = body, segments, base, len(sources)
    st.status = [0] * len(segments)
    st.where = {}
    for i, seg in enumerate(segments):
        for name, _, _ in seg:
            if name is not None:
                st.where[name] = i
    st.bind = None
    _lazy[0] = st
    st.pure = all(e[2] for seg in segments for e in seg)
    # Lazily only when restoring runs none of the script's code: then when
    # it runs, and what the script changed before, make no difference.
    if _EAGER.isdisjoint(st.where) and st.pure:
        p = _PENDING[0]
        for k in st.where:
            globs[k] = p
        return None
    st.bind = set(st.where)
    return _materialize()[0]


def _materialize(name=None):
    # Restores, in place (the namespace keeps its order), every name that
    # still holds the placeholder; with `name`, while a restore runs (code
    # it runs read that name), only the segment that holds it. Returns
    # ([(name, why it was not restored)], whether `name` has its value).
    st = _lazy[0]
    if st is None:
        return [], True
    globs = _target[0]
    p = _PENDING[0]
    if st.bind is None:
        st.bind = {k for k, v in globs.items() if v is p}
    lost = []
    # Without the collector: a restore makes many containers and no garbage,
    # and a collection midway would walk them all for nothing. What it makes
    # lives until the call ends (the process ends with it), so it is then
    # frozen out of the collector's reach, as the warm image is: left young,
    # the next collection walked all of it (17% of the child's time for
    # 2,200 rows). The script's own objects are frozen with it, so its
    # garbage is collected first, and only while that is cheap; a restore
    # that runs the script's code (which may make garbage) is not frozen.
    # (RustPython's counts are each generation's objects: CPython's are not.)
    collecting = _gc_isenabled()
    freeze = collecting and st.pure and sum(_gc_get_count()) <= _FREEZE_MAX
    if freeze:
        _gc_collect()
    _gc_disable()
    try:
        if name is not None:
            i = st.where.get(name)
            if i is not None and st.status[i] == 0:
                _load_segment(st, i, globs, lost)
            return lost, globs.get(name) is not p
        for i in range(len(st.segments)):
            if st.status[i] == 0:
                _load_segment(st, i, globs, lost)
    finally:
        if collecting:
            try:
                if freeze:
                    _gc_freeze()
            finally:
                _gc_enable()
    if all(s == 2 for s in st.status):
        _lazy[0] = None
        for k in st.bind:
            if globs.get(k) is p:
                del globs[k]
    return lost, True


# Past this many of the script's own objects (tracked before a restore),
# a restore is left to the collector: collecting them first would cost.
_FREEZE_MAX = 4096


def _load_segment(st, i, globs, lost):
    # Loads segment `i`, binding its names that are in `st.bind`. Should
    # anything raise out of it, its names hold the placeholder again and
    # it can be loaded later.
    st.status[i] = 1
    p = _PENDING[0]
    f = _BytesIO(st.body[st.starts[i]:st.starts[i + 1]])
    u = _Unpickler(f)
    pos = 0
    failed = None
    bound = []
    try:
        for name, size, _ in st.segments[i]:
            wanted = name is not None and name in st.bind
            if failed is not None:
                # Names share one memo per segment, numbered as they were
                # saved: after a failure the numbering is off, and a later
                # value could silently come back as the wrong objects. Not
                # restoring it is honest.
                if wanted:
                    lost.append((name, "it was saved after %s, which could not be restored" % failed))
                continue
            f.seek(pos)
            pos += size
            try:
                v = u.load()
            except BaseException as e:
                failed = repr(name) if name is not None else "a value since replaced"
                if wanted:
                    lost.append((name, _why(e)))
                continue
            if wanted:
                globs[name] = v
                bound.append(name)
    except BaseException:
        st.status[i] = 0
        for k in bound:
            globs[k] = p
        raise
    st.status[i] = 2
