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
import _pickle
from gc import disable as _gc_disable, enable as _gc_enable, isenabled as _gc_isenabled
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
_lazy = [None]  # (body, segments, old sources): a state not restored yet
# A full save once dead pickles outweigh live ones, or segments pile up.
_SEGMENTS_MAX = 8
_DEAD_MIN = 64 << 10


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


class _Pickler(_pickle.Pickler):
    def reducer_override(self, obj):
        t = type(obj)
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
    text = str(e) or type(e).__name__
    return text.splitlines()[0][:200] if text else type(e).__name__


def _dump_each(values):
    # One pickler for every name, so that what two names share stays shared;
    # each name's pickle is separate, so one that fails to load loses only
    # itself. Returns the concatenated pickles and their lengths.
    buf = _BytesIO()
    p = _Pickler(buf, 4)
    sizes = []
    for v in values.values():
        start = buf.tell()
        p.dump(v)
        sizes.append(buf.tell() - start)
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


def _head(sources, segments):
    head = _BytesIO()
    _pickle.Pickler(head, 4).dump((_VERSION, sources, segments))
    head = head.getvalue()
    return len(head).to_bytes(4, "little") + head


def _should_compact():
    # Whether a save that restored nothing must restore all first: its dead
    # pickles would outweigh the live ones, or it would add one segment too
    # many.
    st = _lazy[0]
    if st is None:
        return False
    globs = _target[0]
    dead = live = 0
    for seg in st[1]:
        for name, size in seg:
            if name is not None and globs.get(name) is _PENDING[0]:
                live += size
            else:
                dead += size
    return len(st[1]) >= _SEGMENTS_MAX or dead > max(live, _DEAD_MIN)


def _save(globs):
    # Returns (state bytes, [(name, why it was not carried)]).
    _target[0] = globs
    values = {k: v for k, v in globs.items()
              if type(k) is str and k not in _SKIP and v is not _PENDING[0]}
    _used.clear()
    st = _lazy[0]
    if st is not None:
        # Nothing was restored: the old sources keep their places, the old
        # pickles are kept as they are, and this call's values follow in a
        # segment of their own (they cannot share an object with the old
        # ones, which never existed in this process).
        body, segments, old_sources = st
        for i in range(old_sources):
            _used[i] = i
    body_new, sizes, dropped = _dump_checked(values)
    _own_globals.clear()
    del _keep_alive[:]
    sources = [None] * len(_used)
    for i, j in _used.items():
        sources[j] = _sources[i]
    _used.clear()
    if st is None:
        return _head(sources, [list(zip(values, sizes))]) + body_new, dropped
    kept, parts, at = [], [], 0
    for seg in segments:
        size = sum(n for _, n in seg)
        entries = [(name if name is not None and globs.get(name) is _PENDING[0] else None, n)
                   for name, n in seg]
        if any(name is not None for name, _ in entries):
            kept.append(entries)
            parts.append(body[at:at + size])
        at += size
    if values:
        kept.append(list(zip(values, sizes)))
        parts.append(body_new)
    return _head(sources, kept) + b"".join(parts), dropped


class _PlainUnpickler(_pickle.Unpickler):
    # The header is plain data: it names nothing.
    def find_class(self, module, name):
        raise _pickle.UnpicklingError("refused global %s.%s" % (module, name))


def _load(globs, blob, lazy):
    # Starts a call from a saved state: registers its sources, then either
    # fills `globs` (returns [(name, why it was not restored)]) or, when
    # `lazy` and no name is a dunder the interpreter itself reads, binds
    # each name to the placeholder (returns None). A state that cannot be
    # read at all raises.
    _target[0] = globs
    n = int.from_bytes(blob[:4], "little")
    version, sources, segments = _PlainUnpickler(_BytesIO(blob[4:4 + n])).load()
    if version == 1:
        segments = [segments]
    elif version != _VERSION:
        raise ValueError("it was saved by another version of Toolgate")
    if type(sources) is not list or type(segments) is not list:
        raise ValueError("its header is not one")
    for s in sources:
        if type(s) is not list or len(s) != 5:
            raise ValueError("it names a source that is not one")
        src, filename, mode, flags, optimize = s
        if (type(src) not in (str, bytes) or type(filename) is not str
                or mode not in ("exec", "eval", "single")
                or type(flags) is not int or type(optimize) is not int):
            raise ValueError("it names a source that is not one")
        _register(src, filename, mode, None, flags, optimize)
    names = []
    total = 0
    for seg in segments:
        if type(seg) is not list:
            raise ValueError("its header is not one")
        for e in seg:
            if (type(e) is not tuple or len(e) != 2 or type(e[1]) is not int or e[1] < 0
                    or (e[0] is not None and type(e[0]) is not str)):
                raise ValueError("its header is not one")
            total += e[1]
            if e[0] is not None:
                names.append(e[0])
    body = blob[4 + n:]
    if total != len(body):
        raise ValueError("its pickles are not the length its header gives")
    if lazy and not any(k[:2] == "__" and k[-2:] == "__" for k in names):
        p = _PENDING[0]
        for k in names:
            globs[k] = p
        _lazy[0] = (body, segments, len(sources))
        return None
    return _load_segments(globs, body, segments, None)


def _materialize():
    # Restores every name that still holds the placeholder, in place (the
    # namespace keeps its order); returns [(name, why it was not restored)].
    st = _lazy[0]
    if st is None:
        return []
    globs = _target[0]
    p = _PENDING[0]
    bind = {k for k, v in globs.items() if v is p}
    lost = _load_segments(globs, st[0], st[1], bind)
    _lazy[0] = None
    for k in bind:
        if globs.get(k) is p:
            del globs[k]
    return lost


def _load_segments(globs, body, segments, bind):
    # Loads every segment, binding its names (those in `bind`, unless None).
    # Without the collector: a restore makes many containers and no garbage,
    # and a collection midway would walk them all for nothing.
    collecting = _gc_isenabled()
    _gc_disable()
    try:
        return _load_all(globs, body, segments, bind)
    finally:
        if collecting:
            _gc_enable()


def _load_all(globs, body, segments, bind):
    lost = []
    at = 0
    for seg in segments:
        f = _BytesIO(body[at:at + sum(n for _, n in seg)])
        at += sum(n for _, n in seg)
        u = _Unpickler(f)
        pos = 0
        failed = None
        for name, size in seg:
            wanted = name is not None and (bind is None or name in bind)
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
    return lost
