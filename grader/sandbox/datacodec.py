"""Python values as plain data, of exact types only: the one way values cross the kernel.

``Codec.enc`` turns a value into a tree of JSON types; ``Codec.dec`` turns such a tree
back into a value. The kernel encodes the student's values and the verifier decodes
them (and the other way round for a student function's arguments). Only exact types
travel as data: ``type(x) is int``, never a subclass, so an object whose ``==`` is
always true, a ``str`` subclass or a list subclass with a forged ``__len__`` arrives as
an opaque reference (``{"$": "obj", "type": ..., "ref": n}``) that the verifier never
compares with data. Functions, classes and other objects are references too: the side
that holds them keeps them in ``refs`` and the other side can only ask it to call them
or read an attribute (``grader.sandbox.pyverify``). A function's reference names its
``module`` and ``qualname`` (so the verifier can tell the notebook's ``abs`` from
Python's); an object's names its class's ``module`` and ``type`` and whether the class
is the notebook's ``own`` (``own_class``: made by Python code, and not the class its
module holds under that name), read through ``type``'s own descriptors so that a
metaclass cannot answer for them.

Data: None, bool, int, float, str, bytes, complex, list, tuple, dict, set, frozenset,
datetime's and decimal's values, numpy arrays (numeric, bool, string, datetime, object)
and scalars, pandas DataFrame, Series, Index (Range, Multi, Datetime, Categorical...),
Categorical and extension arrays, Timestamp, Timedelta, NaT, NA. A value larger than
``max_elements`` (cells of a frame, elements of an array or a list) travels as
``{"$": "big"}`` with its type and shape only.

This file runs in two places: imported by the runner (outside the student's reach) and,
as source, inside the kernel's preamble, executed in a namespace of its own whose
built-ins are a copy taken before the student's first cell; so it uses nothing but
built-ins, the modules handed to ``Codec``, ``sys.modules`` for numpy and pandas, and
``os``'s functions bound when it is loaded.
"""

import os
import sys

MAX_ELEMENTS = 1_000_000
MAX_DEPTH = 60
_PLAIN = (type(None), bool, int, str)
_STD = ("datetime", "date", "time", "timedelta", "Decimal", "Fraction")
_TYPE = dict(type.__dict__)  # type's own descriptors, taken now
_HEAP = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by Python code, not a built-in C type
_ACCESS, _DIRNAME, _W_OK = os.access, os.path.dirname, os.W_OK  # bound before student code


def _text(value):
    return value if type(value) is str else ""


def own_class(t):
    """Whether class ``t`` is the notebook's own: a class made by Python code (a heap
    type) that is not a library's: of ``__main__``, claiming a module's name for a class
    that module does not hold, or of a module whose file lies where this process can
    write (the run's folders: a module the notebook wrote and imported; in the sandbox
    every installed library is read-only)."""
    try:
        if not _TYPE["__flags__"].__get__(t) & _HEAP:
            return False
        module, name = _TYPE["__module__"].__get__(t), _TYPE["__qualname__"].__get__(t)
        if type(module) is not str or module == "__main__":
            return True
        home = holder = sys.modules.get(module)
        if not isinstance(holder, type(sys)):
            return True
        for part in name.split("."):
            holder = vars(holder).get(part)
            if holder is None:
                return True
        where = vars(home).get("__file__")
        return holder is not t or type(where) is not str or _ACCESS(_DIRNAME(where), _W_OK)
    except Exception:
        return True


class Codec:
    """Encodes and decodes one side's values; ``refs`` holds what only travels by id."""

    def __init__(self, refs=None, resolve=None, max_elements=MAX_ELEMENTS):
        self.refs = {} if refs is None else refs
        self.ids = {}
        self.resolve = resolve  # dec: how a reference of the other side becomes a value
        self.max_elements = max_elements

    # -- references ---------------------------------------------------------------------
    def ref(self, x, kind, **info):
        key = id(x)
        n = self.ids.get(key)
        if n is None or self.refs.get(n) is not x:
            n = len(self.refs) + 1
            self.refs[n], self.ids[key] = x, n
        out = {"$": kind, "ref": n}
        out.update(info)
        return out

    # -- encoding -----------------------------------------------------------------------
    def enc(self, x, depth=0):
        t = type(x)
        if t in _PLAIN:
            return x
        if t is float:
            return x if x == x and x not in (float("inf"), float("-inf")) else {
                "$": "float", "v": repr(x)}
        if depth > MAX_DEPTH:
            return self.obj(x, t)
        if t in (list, tuple, set, frozenset):
            if len(x) > self.max_elements:
                return {"$": "big", "type": t.__name__, "shape": [len(x)]}
            items = [self.enc(v, depth + 1) for v in x]
            return items if t is list else {"$": t.__name__, "v": items}
        if t is dict:
            if len(x) > self.max_elements:
                return {"$": "big", "type": "dict", "shape": [len(x)]}
            return {"$": "dict", "k": [self.enc(k, depth + 1) for k in x],
                    "v": [self.enc(v, depth + 1) for v in x.values()]}
        if t is complex:
            return {"$": "complex", "v": [self.enc(x.real), self.enc(x.imag)]}
        if t is bytes:
            return {"$": "bytes", "v": x.hex()}
        if t.__module__ in ("datetime", "decimal", "fractions") and t.__name__ in _STD:
            if t.__name__ == "timedelta":
                return {"$": "timedelta", "v": [x.days, x.seconds, x.microseconds]}
            return {"$": t.__name__, "v": str(x) if t.__name__ in ("Decimal", "Fraction")
                    else x.isoformat()}
        np, pd = sys.modules.get("numpy"), sys.modules.get("pandas")
        if np is not None:
            if t is np.ndarray:
                return self.array(x, depth)
            if isinstance(x, np.generic) and t.__module__ == "numpy":
                return {"$": "npscalar", "dtype": x.dtype.str,
                        "v": self.array(np.array([x]), depth)}
        if pd is not None:
            got = self.pandas(x, t, pd, depth)
            if got is not None:
                return got
        if t.__module__ == "types" or t.__name__ in ("builtin_function_or_method", "method",
                                                     "function", "partial"):
            return self.ref(x, "fn", name=_text(getattr(x, "__name__", "")),
                            module=_text(getattr(x, "__module__", "")),
                            qualname=_text(getattr(x, "__qualname__", "")))
        if t is type:
            return self.ref(x, "class", name=x.__qualname__, module=_text(x.__module__),
                            own=own_class(x))
        if t.__name__ == "module" and t.__module__ == "builtins":
            return self.ref(x, "module", name=x.__name__)
        return self.obj(x, t)

    def obj(self, x, t):
        """An object that is not data: by reference, with its class's names."""
        return self.ref(x, "obj", type=_text(t.__qualname__), module=_text(t.__module__),
                        own=own_class(t))

    def array(self, a, depth):
        if a.size > self.max_elements:
            return {"$": "big", "type": "ndarray", "shape": list(a.shape), "dtype": a.dtype.str}
        kind = a.dtype.kind
        if kind in "biufc?":
            flat = [self.enc(v) for v in a.ravel().tolist()]
        elif kind in "mM":
            flat = a.view("i8").ravel().tolist()
        elif kind in "US":
            flat = [self.enc(v) for v in a.ravel().tolist()]
        elif kind == "O":
            flat = [self.enc(v, depth + 1) for v in a.ravel().tolist()]
        else:
            return self.ref(a, "obj", type="ndarray", module="numpy", own=False)
        return {"$": "ndarray", "dtype": a.dtype.str, "shape": list(a.shape), "v": flat}

    def column(self, values, pd, depth):
        """A Series' or Index's values: a numpy array or a pandas extension array."""
        np = sys.modules["numpy"]
        dtype = values.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            return {"$": "cat", "categories": self.index(dtype.categories, pd, depth),
                    "codes": self.array(np.asarray(values.codes), depth),
                    "ordered": bool(dtype.ordered)}
        if isinstance(dtype, pd.DatetimeTZDtype):
            return {"$": "dttz", "tz": str(dtype.tz), "unit": str(dtype.unit),
                    "v": values.asi8.tolist()}
        if type(values) is not np.ndarray and isinstance(dtype, np.dtype):
            values = values.to_numpy()  # numpy-backed arrays (numbers, naive datetimes)
        if type(values) is np.ndarray:
            return self.array(values, depth)
        return {"$": "ext", "dtype": str(dtype),
                "v": [self.enc(v, depth + 1) for v in values.tolist()]}

    def index(self, ix, pd, depth):
        t = type(ix)
        if t is pd.RangeIndex:
            return {"$": "RangeIndex", "start": ix.start, "stop": ix.stop, "step": ix.step,
                    "name": self.enc(ix.name, depth + 1)}
        if t is pd.MultiIndex:
            return {"$": "MultiIndex", "levels": [self.index(lv, pd, depth) for lv in ix.levels],
                    "codes": [self.array(c, depth) for c in ix.codes],
                    "names": [self.enc(n, depth + 1) for n in ix.names]}
        return {"$": "Index", "v": self.column(ix.array, pd, depth),
                "name": self.enc(ix.name, depth + 1)}

    def pandas(self, x, t, pd, depth):
        if t is pd.DataFrame:
            if x.size > self.max_elements:
                return {"$": "big", "type": "DataFrame", "shape": list(x.shape),
                        "columns": [str(c) for c in x.columns],
                        "dtypes": [str(d) for d in x.dtypes]}
            return {"$": "DataFrame", "columns": self.index(x.columns, pd, depth),
                    "index": self.index(x.index, pd, depth),
                    "data": [self.column(x.iloc[:, i].array, pd, depth)
                             for i in range(x.shape[1])]}
        if t is pd.Series:
            if len(x) > self.max_elements:
                return {"$": "big", "type": "Series", "shape": [len(x)], "dtype": str(x.dtype)}
            return {"$": "Series", "name": self.enc(x.name, depth + 1),
                    "index": self.index(x.index, pd, depth),
                    "v": self.column(x.array, pd, depth)}
        if isinstance(x, pd.Index) and t.__module__.startswith("pandas"):
            return self.index(x, pd, depth)
        if t is pd.Categorical:
            return {"$": "Categorical", "v": self.column(x, pd, depth)}
        if t is pd.Timestamp:
            return {"$": "Timestamp", "v": x.value, "tz": None if x.tz is None else str(x.tz)}
        if t is pd.Timedelta:
            return {"$": "Timedelta", "v": x.value}
        if x is pd.NaT:
            return {"$": "NaT"}
        if x is pd.NA:
            return {"$": "NA"}
        return None

    # -- decoding -----------------------------------------------------------------------
    def dec(self, x):
        t = type(x)
        if t in _PLAIN or t is float:
            return x
        if t is list:
            return [self.dec(v) for v in x]
        if t is not dict:
            raise ValueError(f"not data: {t.__name__}")
        tag = x.get("$")
        if tag == "float":
            return float(x["v"])
        if tag in ("tuple", "set", "frozenset"):
            return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](
                self.dec(v) for v in x["v"])
        if tag == "dict":
            return {self.dec(k): self.dec(v) for k, v in zip(x["k"], x["v"], strict=True)}
        if tag == "complex":
            return complex(float(x["v"][0]), float(x["v"][1]))
        if tag == "bytes":
            return bytes.fromhex(x["v"])
        if tag in _STD:
            return self.std(tag, x["v"])
        if tag in ("fn", "class", "module", "obj", "big", "ref"):
            if self.resolve is None:
                raise ValueError(f"a reference ({tag}) where data was expected")
            return self.resolve(x)
        np = _module("numpy")
        if tag == "ndarray":
            return self.dec_array(x, np)
        if tag == "npscalar":
            return self.dec_array(x["v"], np)[0]
        pd = _module("pandas")
        if tag == "DataFrame":
            cols = [self.dec_column(c, np, pd) for c in x["data"]]
            frame = pd.DataFrame(dict(enumerate(cols)), index=self.dec_index(x["index"], pd))
            if not cols:
                frame = pd.DataFrame(index=self.dec_index(x["index"], pd))
            frame.columns = self.dec_index(x["columns"], pd)
            return frame
        if tag == "Series":
            return pd.Series(self.dec_column(x["v"], np, pd), index=self.dec_index(
                x["index"], pd), name=self.dec(x["name"]), copy=False)
        if tag in ("RangeIndex", "MultiIndex", "Index"):
            return self.dec_index(x, pd)
        if tag == "Categorical":
            return self.dec_column(x["v"], np, pd)
        if tag == "Timestamp":
            return pd.Timestamp(int(x["v"]), tz=x.get("tz"))
        if tag == "Timedelta":
            return pd.Timedelta(int(x["v"]))
        if tag == "NaT":
            return pd.NaT
        if tag == "NA":
            return pd.NA
        raise ValueError(f"unknown data tag {tag!r}")

    def std(self, tag, v):
        if tag == "Decimal":
            import decimal
            return decimal.Decimal(str(v))
        if tag == "Fraction":
            import fractions
            return fractions.Fraction(str(v))
        import datetime
        if tag == "timedelta":
            return datetime.timedelta(days=int(v[0]), seconds=int(v[1]), microseconds=int(v[2]))
        return getattr(datetime, tag).fromisoformat(str(v))

    def dec_array(self, x, np):
        dtype = np.dtype(x["dtype"])
        if dtype.kind in "mM":
            return np.array(x["v"], dtype="i8").view(dtype).reshape(x["shape"])
        if dtype.kind == "O":
            flat = np.empty(len(x["v"]), dtype=object)
            for i, v in enumerate(x["v"]):
                flat[i] = self.dec(v)
            return flat.reshape(x["shape"])
        if dtype.kind not in "biufcUS?":
            raise ValueError(f"unexpected array dtype {dtype}")
        return np.array([self.dec(v) for v in x["v"]], dtype=dtype).reshape(x["shape"])

    def dec_column(self, x, np, pd):
        tag = x.get("$")
        if tag == "cat":
            return pd.Categorical.from_codes(self.dec_array(x["codes"], np), dtype=(
                pd.CategoricalDtype(self.dec_index(x["categories"], pd), bool(x["ordered"]))))
        if tag == "dttz":
            unit = str(x.get("unit", "ns"))
            if unit not in ("s", "ms", "us", "ns"):
                raise ValueError(f"not a time unit: {unit!r}")
            naive = np.array(x["v"], dtype="i8").view(f"M8[{unit}]")
            return pd.DatetimeIndex(naive).tz_localize("UTC").tz_convert(x["tz"]).array
        if tag == "ext":
            return pd.array([self.dec(v) for v in x["v"]], dtype=x["dtype"])
        if tag == "ndarray":
            return self.dec_array(x, np)
        raise ValueError(f"not a column: {tag!r}")

    def dec_index(self, x, pd):
        tag = x.get("$")
        if tag == "RangeIndex":
            return pd.RangeIndex(int(x["start"]), int(x["stop"]), int(x["step"]),
                                 name=self.dec(x["name"]))
        if tag == "MultiIndex":
            np = _module("numpy")
            return pd.MultiIndex(levels=[self.dec_index(lv, pd) for lv in x["levels"]],
                                 codes=[self.dec_array(c, np) for c in x["codes"]],
                                 names=[self.dec(n) for n in x["names"]])
        if tag == "Index":
            return pd.Index(self.dec_column(x["v"], _module("numpy"), pd),
                            name=self.dec(x["name"]))
        raise ValueError(f"not an index: {tag!r}")


def _module(name):
    """numpy or pandas, imported when data needs it (the verifier side only)."""
    got = sys.modules.get(name)
    if got is None:
        import importlib
        got = importlib.import_module(name)
    return got
