"""The Python kernel's side of the bridge: the preamble that binds it before student code.

``preamble_source(codec_source, secret, marker, name)`` is the hidden cell the runner
runs before the student's first cell. It defines one function ``handle(request)``, kept
as ``sys.modules[name].handle`` (``name`` is random; ``%reset`` does not reach it), that
answers the verifier (``grader.sandbox.pyverify``)
with data only, through what the cell bound before any student code could run:

- the codec (``datacodec.py``) executed in a namespace of its own whose built-ins are a
  copy of Python's, taken now (a later ``builtins.len = ...`` does not reach it);
- the C JSON encoder and scanner (``_json``), not ``json.dumps`` / ``json.loads``;
- the kernel's stdout stream and its ``write``, ``flush`` and ``set_parent`` methods, bound
  now (a replaced ``sys.stdout`` or a patched stream class does not carry our line);
- ``secret``: each reply carries a SHA-256 over the secret and the payload, so an answer
  written by anything but this closure (a replaced ``handle``, a forged line) is told
  apart by the verifier. The preamble drops its own source from ``linecache``.

Requests: ``{"op": ..., "canary": ...}`` with ``names`` (the user's global names),
``export`` (values of names, as data), ``call`` (a student function or object, with
arguments as data, globals a test deleted hidden meanwhile, stdout captured),
``getattr`` and ``apply`` (``repr``, ``str``, ``len``, ``iter``, ``getitem``,
``contains``, ``eq``: only answers of exact types count), and ``forget`` (delete globals
a live test deleted). Every reply names the
built-ins and ``json`` functions found replaced since the preamble.
"""

from __future__ import annotations

import json

__all__ = ["preamble_source"]

_KERNEL = r'''
def _grader_bind(codec_source, secret, marker, name):
    import _json, builtins, hashlib, io, json, linecache, sys
    snapshot = dict(vars(builtins))
    space = {"__builtins__": snapshot, "__name__": "grader_codec"}
    exec(compile(codec_source, "<grader codec>", "exec"), space)

    def refuse(value):
        raise TypeError("not data")

    encode = _json.make_encoder(None, refuse, _json.encode_basestring_ascii, None, ":", ",",
                                False, False, True)
    scan = _json.make_scanner(json.JSONDecoder())
    sha, join, StringIO = hashlib.sha256, "".join, io.StringIO
    stream = sys.stdout
    write, flush = stream.write, stream.flush
    set_parent = getattr(stream, "set_parent", None)
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    user = shell.user_ns if shell is not None else sys.modules["__main__"].__dict__
    watched = {("builtins", k): v for k, v in snapshot.items()
               if not k.startswith("_") and type(v).__name__ in ("builtin_function_or_method",
                                                                "type")}
    watched.update({("json", "dumps"): json.dumps, ("json", "loads"): json.loads,
                    ("json", "JSONEncoder"): json.JSONEncoder})
    modules = {"builtins": builtins, "json": json}
    refs = {}
    codec = space["Codec"](refs)

    def resolve(tree):
        if tree.get("$") == "ref" and tree.get("ref") in refs:
            return refs[tree["ref"]]
        raise ValueError("an unknown reference")

    codec.resolve = resolve
    own = frozenset({name, "In", "Out", "exit", "quit", "get_ipython", "_", "__", "___",
                     "_ih", "_oh", "_dh", "_i", "_ii", "_iii", "__builtins__", "__name__",
                     "__doc__", "__package__", "__loader__", "__spec__", "__builtin__"})

    def replaced():
        out = []
        for (mod, key), value in watched.items():
            if getattr(modules[mod], key, None) is not value:
                out.append(mod + "." + key)
        return out

    def answer(canary, body):
        payload = join(encode({"canary": canary, "body": body, "replaced": replaced()}, 0))
        mac = sha((secret + payload).encode()).hexdigest()
        if set_parent is not None and shell is not None:
            set_parent(shell.parent_header)
        write("\n" + marker + mac + " " + payload + "\n")
        flush()

    def called(target, args, kwargs, deleted):
        kept = {k: user.pop(k) for k in deleted if k in user}
        buffer, before = StringIO(), sys.stdout
        sys.stdout = buffer
        try:
            value = target(*args, **kwargs)
        except BaseException as exc:  # the student's error is data for the verifier
            kind = type(exc)
            try:
                text = str(exc)
            except Exception:
                text = ""
            return {"raised": {"type": kind.__name__, "module": kind.__module__,
                               "message": text[:2000] if type(text) is str else ""},
                    "stdout": buffer.getvalue()}
        finally:
            sys.stdout = before
            user.update(kept)
        return {"value": codec.enc(value), "stdout": buffer.getvalue()}

    def applied(target, how, arg):
        if how == "repr":
            got = snapshot["repr"](target)
        elif how == "str":
            got = snapshot["str"](target)
        elif how == "len":
            got = snapshot["len"](target)
        elif how == "iter":
            got = snapshot["list"](target)
        elif how == "getitem":
            got = target[arg]
        elif how == "contains":
            got = arg in target
        elif how == "eq":
            got = target == arg
        elif how in ("lt", "le", "gt", "ge"):
            got = {"lt": target.__lt__, "le": target.__le__, "gt": target.__gt__,
                   "ge": target.__ge__}[how](arg)
            if got is NotImplemented:
                raise TypeError("the object cannot be compared with that value")
        elif how == "bool":
            got = snapshot["bool"](target)
        elif how == "isiter":  # an iterator (a generator): iterated one item at a time
            got = snapshot["iter"](target) is target
        elif how == "next":  # [item], or [] once it is exhausted
            try:
                got = [snapshot["next"](target)]
            except StopIteration:
                got = []
        elif how == "enter":
            got = type(target).__enter__(target)
        elif how == "exit":  # the test's own error stays the test's: the kernel sees none
            got = type(target).__exit__(target, None, None, None)
        else:
            raise ValueError("no such operation")
        want = {"repr": str, "str": str, "len": int, "contains": bool, "eq": bool,
                "lt": bool, "le": bool, "gt": bool, "ge": bool, "bool": bool,
                "isiter": bool}.get(how)
        if want is not None and type(got) is not want:
            raise TypeError(how + " did not give a plain " + want.__name__)
        return codec.enc(got)

    def handle(request):
        request, _ = scan(request, 0)
        canary, op = request.get("canary"), request.get("op")
        try:
            if op == "names":
                body = [k for k in user if type(k) is str and k not in own
                        and not k.startswith("_i")]
            elif op == "export":
                body = {}
                for k in request["names"]:
                    try:
                        body[k] = codec.enc(user[k]) if k in user else {"$": "missing"}
                    except Exception as exc:  # this value only: the others still travel
                        body[k] = {"$": "failed", "error": type(exc).__name__ + ": "
                                   + str(exc)[:500]}
            elif op == "call":
                body = called(codec.dec(request["target"]), codec.dec(request["args"]),
                              codec.dec(request["kwargs"]), request.get("deleted", []))
            elif op == "forget":  # a live test's deletions (its own del), made here
                for k in request["names"]:
                    if type(k) is str and k not in own:
                        user.pop(k, None)
                body = {}
            elif op == "getattr":
                body = codec.enc(getattr(codec.dec(request["target"]), request["name"]))
            elif op == "apply":
                body = applied(codec.dec(request["target"]), request["how"],
                               codec.dec(request.get("arg")))
            else:
                body = {"$": "failed", "error": "unknown request"}
        except Exception as exc:
            body = {"$": "failed", "error": type(exc).__name__ + ": " + str(exc)[:500]}
        answer(canary, body)

    for key in list(linecache.cache):
        entry = linecache.cache.get(key)
        if entry and len(entry) > 2 and any(secret in line for line in entry[2] or ()):
            del linecache.cache[key]
    # kept in sys.modules, not in the user's namespace: %reset and del leave it alone
    holder = type(sys)(name)
    holder.handle = handle
    sys.modules[name] = holder


_grader_bind(CODEC, SECRET, MARKER, NAME)
del _grader_bind
'''


def preamble_source(codec_source: str, secret: str, marker: str, name: str) -> str:
    """The preamble cell: binds the bridge under ``name`` before any student code. The
    bridge's code runs in a namespace of its own whose built-ins are a copy taken now, so
    nothing it looks up by name can be replaced later from the user's namespace."""
    call = (f"_grader_bind({codec_source!r}, {json.dumps(secret)}, {json.dumps(marker)}, "
            f"{json.dumps(name)})")
    source = _KERNEL.replace("_grader_bind(CODEC, SECRET, MARKER, NAME)\ndel _grader_bind\n",
                             call + "\n")
    return (f"exec(compile({source!r}, '<grader bridge>', 'exec'), {{'__builtins__': "
            "dict(vars(__import__('builtins'))), '__name__': 'grader_bridge'})\n")
