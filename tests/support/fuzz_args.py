# The argument-conversion fuzzer of tests/tests/fuzz.rs (#51), run inside
# python.execute: every builtin, every method of a sample of each built-in
# type and every public callable of the allowlisted modules and their
# natives, called with one hostile argument in each place of 1-3 arguments.
# It prints each probe's number before making it, so that a call that dies
# names its probe; DESCRIBE >= 0 prints probe DESCRIBE's call instead.
import typing, math, cmath, itertools, operator, functools, collections, array, struct, datetime
import decimal, fractions, random, statistics, string, textwrap, calendar, json, re, heapq
import bisect, base64, hashlib, hmac, unicodedata, copy, difflib, enum, numbers, pprint
import dataclasses, time, csv
sys = typing.sys
START, STOP, DESCRIBE, SUBSET = 0, 10**9, -1, 0
B = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)


class Idx:
    def __init__(self, v):
        self.v = v
    def __index__(self):
        if isinstance(self.v, BaseException):
            raise self.v
        return self.v
    def __repr__(self):
        return f'Idx({self.v!r})'


class Flt:
    def __init__(self, v):
        self.v = v
    def __float__(self):
        return self.v
    def __repr__(self):
        return f'Flt({self.v!r})'


class BigInt(int):
    pass


class BigFloat(float):
    pass


HOSTILE = [
    0, 1, -1, 2**31, -2**31, 2**31 - 1, 2**32, 2**63 - 1, 2**63, -2**63, -2**63 - 1,
    2**64, 2**64 + 1, 10**30, -10**30, 2**1000, 0.0, -0.0, 1e300, -1e300,
    float('inf'), float('-inf'), float('nan'), 5e-324,
    Idx(2**63), Idx(-1), Idx(2**64), Idx(-2**63 - 1), Idx(10**30), Idx('a'),
    Idx(ValueError('boom')), Flt(1e300), Flt(float('nan')), Flt('a'),
    BigInt(2**63), BigFloat(1e300), True, None, '', b'\xff', [], (), {}, object(),
]
BENIGN = [1, 'a']
# Calls that wait, end the script, print, or reach outside it.
SKIP = {'exit', 'quit', 'input', 'breakpoint', 'help', 'print', 'open', 'sleep',
        'pprint', 'pp', 'prcal', 'prmonth', 'prweek', 'pryear'}
SKIP_ATTRS = {'__del__', '__init_subclass__', '__subclasshook__', '__class__'}

SAMPLES = {
    'int': lambda: 5, 'bool': lambda: True, 'float': lambda: 1.5, 'complex': lambda: 1 + 2j,
    'str': lambda: 'abc', 'bytes': lambda: b'abc', 'bytearray': lambda: bytearray(b'abc'),
    'list': lambda: [1, 2, 3], 'tuple': lambda: (1, 2, 3), 'dict': lambda: {'a': 1},
    'set': lambda: {1, 2}, 'frozenset': lambda: frozenset({1}), 'range': lambda: range(10),
    'slice': lambda: slice(1, 5, 2), 'memoryview': lambda: memoryview(bytearray(b'abcd')),
    'array': lambda: array.array('i', [1, 2, 3]), 'deque': lambda: collections.deque([1, 2]),
    'OrderedDict': lambda: collections.OrderedDict(a=1), 'Counter': lambda: collections.Counter('ab'),
    'defaultdict': lambda: collections.defaultdict(int), 'Decimal': lambda: decimal.Decimal('1.5'),
    'Fraction': lambda: fractions.Fraction(1, 3), 'date': lambda: datetime.date(2020, 1, 1),
    'datetime': lambda: datetime.datetime(2020, 1, 1, 12), 'time': lambda: datetime.time(12),
    'timedelta': lambda: datetime.timedelta(1), 'timezone': lambda: datetime.timezone.utc,
    'Pattern': lambda: re.compile('a(b)'), 'Match': lambda: re.match('a(b)', 'ab'),
    'Struct': lambda: struct.Struct('i'), 'Random': lambda: random.Random(1),
    'sha256': lambda: hashlib.sha256(b'a'), 'md5': lambda: hashlib.md5(b'a'),
    'hmac': lambda: hmac.new(b'k', b'm', 'sha256'), 'count': lambda: itertools.count(),
    'struct_time': lambda: time.gmtime(0), 'Template': lambda: string.Template('$a'),
    'Context': lambda: decimal.Context(), 'str_iterator': lambda: iter('abc'),
    'list_iterator': lambda: iter([1, 2]), 'dict_keys': lambda: {'a': 1}.keys(),
    'dict_items': lambda: {'a': 1}.items(), 'mappingproxy': lambda: type.__dict__,
    'TextWrapper': lambda: textwrap.TextWrapper(), 'SequenceMatcher': lambda: difflib.SequenceMatcher(None, 'ab', 'ac'),
    'Calendar': lambda: calendar.Calendar(), 'JSONDecoder': lambda: json.JSONDecoder(),
    'JSONEncoder': lambda: json.JSONEncoder(), 'generator': lambda: (i for i in range(3)),
    'property': lambda: property(len), 'classmethod': lambda: classmethod(len),
    'staticmethod': lambda: staticmethod(len), 'super': lambda: super(int, 5),
    'type': lambda: int, 'object': lambda: object(), 'NoneType': lambda: None,
    'NotImplementedType': lambda: NotImplemented, 'ellipsis': lambda: ...,
    'function': lambda: (lambda *a: a), 'builtin_function': lambda: len,
    'method': lambda: [].append, 'zip': lambda: zip('ab', 'cd'), 'map': lambda: map(abs, [1]),
    'enumerate': lambda: enumerate('ab'), 'reversed': lambda: reversed([1, 2]),
    'BaseException': lambda: ValueError('x'), 'OSError': lambda: OSError(2, 'x'),
    'UnicodeDecodeError': lambda: UnicodeDecodeError('utf-8', b'\xff', 0, 1, 'bad'),
    'SyntaxError': lambda: SyntaxError('x', ('f', 1, 1, 'x', 1, 1)),
    'cell': lambda: (lambda x: (lambda: x))(1).__closure__[0],
    'code': lambda: (lambda: 0).__code__,
}
MODULES = ['math', 'cmath', 'itertools', 'operator', 'functools', 'collections', 'array',
           'struct', 'datetime', 'decimal', 'fractions', 'random', 'statistics', 'string',
           'textwrap', 'calendar', 'json', 're', 'heapq', 'bisect', 'base64', 'hashlib',
           'hmac', 'unicodedata', 'copy', 'difflib', 'enum', 'numbers', 'dataclasses',
           'time', 'csv']
# The natives behind them, as loaded (not the interpreter's own: sys,
# _imp, _io, _signal, _thread, _warnings).
NOT_NATIVE = {'sys', 'builtins', '_imp', '_io', '_signal', '_thread', '_warnings', 'marshal',
              '_frozen_importlib', '_frozen_importlib_external', 'gc', 'atexit', '_sandbox'}
for name, m in sorted(sys.modules.items()):
    if (type(m).__name__ == 'module' and name not in NOT_NATIVE and name not in MODULES
            and getattr(getattr(m, '__spec__', None), 'origin', None) == 'built-in'):
        MODULES.append(name)


def callables():
    out = []
    for name in sorted(B):
        if name not in SKIP and callable(B[name]):
            out.append(('builtins.' + name, lambda v=B[name]: v))
    for tname in sorted(SAMPLES):
        mk = SAMPLES[tname]
        for a in sorted(dir(type(mk()))):
            if a in SKIP_ATTRS or a in SKIP:
                continue
            try:
                v = getattr(mk(), a)
            except Exception:
                continue
            if callable(v):
                out.append((tname + '.' + a, lambda mk=mk, a=a: getattr(mk(), a)))
    for mname in MODULES:
        m = sys.modules.get(mname)
        if m is None:
            continue
        for a in sorted(vars(m)):
            if a.startswith('_') or a in SKIP:
                continue
            v = getattr(m, a)
            if callable(v) and not isinstance(v, type(sys)):
                out.append((mname + '.' + a, lambda v=v: v))
    return out


CALLS = callables()
if SUBSET:
    CALLS = CALLS[::SUBSET]
# Per callable: one hostile argument alone, or in each place of 2 and 3
# with each benign filler.
SHAPES = [(1, 0, None)] + [(k, pos, b) for k in (2, 3) for pos in range(k) for b in BENIGN]
PER = len(SHAPES) * len(HOSTILE)
TOTAL = len(CALLS) * PER


def probe(i):
    c, rest = divmod(i, PER)
    s, h = divmod(rest, len(HOSTILE))
    k, pos, b = SHAPES[s]
    args = [b] * k
    args[pos] = HOSTILE[h]
    return CALLS[c], args


if DESCRIBE >= 0:
    (label, _), args = probe(DESCRIBE)
    print(label + '(' + ', '.join(map(repr, args)) + ')')
else:
    for i in range(START, min(STOP, TOTAL)):
        print(i)
        (label, get), args = probe(i)
        try:
            get()(*args)
        except BaseException:
            pass
    print('done', TOTAL)
