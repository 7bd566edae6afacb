"""Inspecting student code: variables in the kernel, and paths in the source.

``inspection_code(language, names, marker)`` returns source code that, run as one
more cell in the student's kernel after their last cell, prints exactly one line:
``marker`` followed by a JSON array with one object per name (the fields of
``VariableSummary``, below). Each variable is summarised on its own, so a
variable that cannot be inspected carries an ``error`` and never breaks the others.
A name that starts with ``=`` is an instructor's expression (``value`` checks:
``=nrow(sales_clean)``): it is evaluated in the kernel's global namespace and its
value summarised like a variable's; one that fails gives ``exists`` false and the
error it raised.

Conventions shared by both languages, so that summaries compare:
- frames: ``values`` is a list of rows (cells JSON-safe; missing values are null),
  ``head`` the first rows; ``summary`` holds ``"<column>:sum|mean|min|max"`` for
  numeric and logical columns, non-missing values only, finite results only;
- a pandas index of labels (not integers) becomes the leading cell(s) of each row,
  so ``groupby(...).sum()`` and ``groupby(..., as_index=False).sum()`` compare equal;
  R row names are ignored;
- vectors, Series and arrays: ``values`` is a list (``summary`` keys ``sum``, ...);
  a length-1 R vector and a Python scalar give a scalar;
- ``values`` is null when there are more than ``max_cells`` cells.
R summaries use jsonlite, which IRkernel itself depends on. ``parse_inspection`` reads
the line back, outside the sandbox.

``string_literals`` and ``chdir_targets`` scan source text (Python or R, no parsing, so
broken cells and magics are fine) for the paths the execution layer maps data to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_CELLS = 20_000
HEAD_ROWS = 5
_BODY = r"""(?P<q>["'])(?P<body>(?:\\.|(?!(?P=q))[^\\\n])*)(?P=q)"""
_STRING = re.compile(r"(?P<raw>\b[rR])?" + _BODY)
_CHDIR = re.compile(r"(?:\bsetwd|\bchdir)\s*\(\s*(?P<raw>[rR])?" + _BODY)
_CD_MAGIC = re.compile(r"^\s*%cd\s+(?P<q>[\"']?)(?P<body>[^\"'\n]+)(?P=q)\s*$", re.MULTILINE)

EXPRESSION = "="  # the prefix of an expression among the names to inspect


def expression_key(expression: str) -> str:
    """The name under which an expression's value is inspected and reported."""
    return EXPRESSION + expression.strip()


@dataclass(frozen=True)
class VariableSummary:
    """What the inspection cell saw of one variable in the kernel's namespace."""

    name: str
    exists: bool
    type: str = ""  # DataFrame, Series, ndarray, int, float, str, list, dict; data.frame, ...
    shape: tuple[int, ...] | None = None
    columns: tuple[str, ...] | None = None
    dtypes: tuple[str, ...] | None = None
    values: Any = None  # JSON-safe full values; None when too big
    head: Any = None  # first rows / elements, JSON-safe
    summary: dict[str, float] = field(default_factory=dict)  # "<col>:sum" ... for big frames
    error: str = ""  # inspection failure message

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VariableSummary:
        def strings(value: Any) -> tuple[str, ...] | None:
            return None if value is None else tuple(str(v) for v in value)

        summary = data.get("summary")
        return cls(
            name=str(data.get("name", "")),
            exists=bool(data.get("exists", False)),
            type=str(data.get("type", "")),
            shape=None if data.get("shape") is None else tuple(int(n) for n in data["shape"]),
            columns=strings(data.get("columns")),
            dtypes=strings(data.get("dtypes")),
            values=data.get("values"),
            head=data.get("head"),
            summary={str(k): float(v) for k, v in summary.items() if isinstance(v, (int, float))}
            if isinstance(summary, dict)
            else {},
            error=str(data.get("error", "")),
        )

    @property
    def rows(self) -> int | None:
        return self.shape[0] if self.shape else None



_PYTHON = r"""
def __grader_inspect__(names, marker, max_cells, head_n):
    import json, math, sys
    pd, np = sys.modules.get("pandas"), sys.modules.get("numpy")
    user = globals()

    def safe(v):
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            return None if math.isnan(v) else v
        if np is not None and isinstance(v, np.ndarray):
            return safe(v.tolist())
        if np is not None and isinstance(v, np.generic):
            return safe(v.item())
        if isinstance(v, (list, tuple)):
            return [safe(x) for x in v]
        if isinstance(v, dict):
            return {str(k): safe(x) for k, x in v.items()}
        if isinstance(v, (set, frozenset)):
            return sorted((safe(x) for x in v), key=repr)
        if pd is not None:
            try:
                if pd.isna(v):
                    return None
            except (TypeError, ValueError):
                pass
        return str(v)

    def stats(values, prefix):
        nums = [float(x) for x in values if isinstance(x, (int, float))]  # bools count as 0/1
        nums = [x for x in nums if not math.isnan(x)]
        if not nums:
            return {}
        out = {"sum": math.fsum(nums), "mean": math.fsum(nums) / len(nums),
               "min": min(nums), "max": max(nums)}
        return {prefix + k: x for k, x in out.items() if math.isfinite(x)}

    def labelled(index):
        return not (pd.api.types.is_integer_dtype(index.dtype) and index.nlevels == 1)

    def rows(frame):
        if labelled(frame.index):
            frame = frame.reset_index()
        return [[safe(x) for x in row] for row in frame.astype(object).itertuples(index=False)]

    def numeric(series):
        return pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(
            series.dtype)

    def summarise(x):
        s = {"type": type(x).__name__, "shape": None, "columns": None, "dtypes": None,
             "values": None, "head": None, "summary": {}}
        if pd is not None and isinstance(x, pd.DataFrame):
            s.update(shape=list(x.shape), columns=[str(c) for c in x.columns],
                     dtypes=[str(t) for t in x.dtypes], head=rows(x.head(head_n)))
            s["values"] = rows(x) if x.size <= max_cells else None
            for i, col in enumerate(s["columns"]):
                column = x.iloc[:, i]
                if numeric(column):
                    s["summary"].update(stats(column.astype(float).tolist(), col + ":"))
        elif pd is not None and isinstance(x, pd.Series):
            s.update(shape=[len(x)], dtypes=[str(x.dtype)])
            frame = x.to_frame()
            if labelled(x.index):
                s["head"] = rows(frame.head(head_n))
                s["values"] = rows(frame) if len(x) <= max_cells else None
            else:
                s["head"] = safe(x.head(head_n).astype(object).tolist())
                s["values"] = safe(x.astype(object).tolist()) if len(x) <= max_cells else None
            if numeric(x):
                s["summary"] = stats(x.astype(float).tolist(), "")
        elif np is not None and isinstance(x, np.ndarray):
            s.update(shape=list(x.shape), dtypes=[str(x.dtype)], head=safe(x[:head_n]))
            s["values"] = safe(x) if x.size <= max_cells else None
            if x.dtype.kind in "biuf":
                s["summary"] = stats(x.astype(float).ravel().tolist(), "")
        elif isinstance(x, (bool, int, float, str)) or (
                np is not None and isinstance(x, np.generic)):
            plain = x.item() if np is not None and isinstance(x, np.generic) else x
            s.update(type=type(plain).__name__, values=safe(plain), head=safe(plain))
        elif isinstance(x, (list, tuple, set, frozenset, dict)):
            s["shape"] = [len(x)]
            if isinstance(x, dict):
                s["columns"] = [str(k) for k in x]
                s["head"] = safe(dict(list(x.items())[:head_n]))
            else:
                s["head"] = safe(list(x)[:head_n])
                s["summary"] = stats(list(x), "")
            s["values"] = safe(x) if len(x) <= max_cells else None
        else:
            s["head"] = repr(x)[:500]
        return s

    out = []
    for name in names:
        try:
            if name.startswith("="):  # an instructor's expression, evaluated here
                try:
                    value = eval(compile(name[1:], "<expression>", "eval"), user)
                except Exception as exc:
                    out.append({"name": name, "exists": False,
                                "error": f"{type(exc).__name__}: {exc}"})
                    continue
                s = summarise(value)
                s.update(name=name, exists=True)
                json.dumps(s, default=str)
                out.append(s)
                continue
            if name not in user:
                out.append({"name": name, "exists": False})
                continue
            s = summarise(user[name])
            s.update(name=name, exists=True)
            json.dumps(s, default=str)
            out.append(s)
        except Exception as exc:
            out.append({"name": name, "exists": True, "error": f"{type(exc).__name__}: {exc}"})
    sys.stdout.write(marker + json.dumps(out, default=str) + "\n")
    sys.stdout.flush()


try:
    __grader_inspect__(__NAMES__, __MARKER__, __MAX_CELLS__, __HEAD__)
finally:
    del __grader_inspect__
"""

_R = r"""
local({
  .marker <- __MARKER__
  .names <- c(__NAMES__)
  .max <- __MAX_CELLS__
  .head <- __HEAD__
  .stats <- function(v, prefix) {
    out <- list()
    if (!(is.numeric(v) || is.logical(v)) || is.factor(v)) return(out)
    v <- as.numeric(v)
    v <- v[!is.na(v)]
    if (length(v) == 0) return(out)
    for (s in c("sum", "mean", "min", "max")) {
      r <- do.call(s, list(v))
      if (is.finite(r)) out[[paste0(prefix, s)]] <- r
    }
    out
  }
  .vec <- function(v) {
    if (is.factor(v)) v <- as.character(v)
    if (inherits(v, c("Date", "POSIXt", "difftime", "hms"))) v <- format(v)
    unname(as.vector(v))
  }
  .one <- function(name) {
    if (startsWith(name, "=")) {  # an instructor's expression, evaluated here
      x <- tryCatch(eval(parse(text = substring(name, 2)), envir = globalenv()),
                    error = function(e) structure(list(conditionMessage(e)),
                                                  class = ".grader_failed"))
      if (inherits(x, ".grader_failed"))
        return(list(name = name, exists = FALSE, error = paste("Error:", x[[1]])))
    } else {
      if (!exists(name, envir = globalenv(), inherits = FALSE))
        return(list(name = name, exists = FALSE))
      x <- get(name, envir = globalenv(), inherits = FALSE)
    }
    s <- list(name = name, exists = TRUE, type = class(x)[1])
    if (is.data.frame(x)) {
      s$type <- if (inherits(x, "tbl_df")) "tbl_df" else "data.frame"
      d <- as.data.frame(x, stringsAsFactors = FALSE)
      rownames(d) <- NULL
      s$shape <- I(dim(d))
      s$columns <- I(names(d))
      s$dtypes <- I(unname(vapply(d, function(col) class(col)[1], "")))
      s$values <- if (nrow(d) * ncol(d) <= .max) d else NULL
      s$head <- utils::head(d, .head)
      st <- list()
      for (col in names(d)) st <- c(st, .stats(d[[col]], paste0(col, ":")))
      s$summary <- st
    } else if (is.atomic(x) && !is.null(dim(x))) {
      s$shape <- I(dim(x))
      s$dtypes <- I(typeof(x))
      s$values <- if (length(x) <= .max) unname(x) else NULL
      s$head <- unname(x[seq_len(min(nrow(x), .head)), , drop = FALSE])
      s$summary <- .stats(x, "")
    } else if (is.atomic(x) || is.factor(x)) {
      s$shape <- I(length(x))
      s$dtypes <- I(class(x)[1])
      s$values <- if (length(x) <= .max) .vec(x) else NULL
      s$head <- .vec(utils::head(x, .head))
      s$summary <- .stats(x, "")
    } else if (is.list(x)) {
      s$shape <- I(length(x))
      if (!is.null(names(x))) s$columns <- I(names(x))
      s$values <- if (length(x) <= .max) x else NULL
      s$head <- utils::head(x, .head)
    } else {
      s$head <- paste(utils::capture.output(print(x)), collapse = "\n")
    }
    s
  }
  .json <- function(s) as.character(jsonlite::toJSON(
    s, auto_unbox = TRUE, dataframe = "values", na = "null", null = "null", digits = NA,
    force = TRUE))
  .parts <- vapply(.names, function(name) tryCatch(
    .json(.one(name)),
    error = function(e) .json(list(name = name, exists = TRUE, error = conditionMessage(e)))
  ), "")
  cat(.marker, "[", paste(.parts, collapse = ","), "]\n", sep = "")
  invisible(NULL)
})
"""

_TEMPLATES = {"python": _PYTHON, "r": _R}


def inspection_code(
    language: str,
    names: Sequence[str],
    marker: str,
    max_cells: int = MAX_CELLS,
    head_rows: int = HEAD_ROWS,
) -> str:
    """Source that prints ``marker`` + a JSON array summarising ``names`` (one line)."""
    try:
        template = _TEMPLATES[language]
    except KeyError:
        raise ValueError(
            f"no inspection code for language {language!r}; choose one of {sorted(_TEMPLATES)}"
        ) from None
    quoted = [json.dumps(str(n)) for n in names]  # JSON strings are valid R strings too
    names_code = ", ".join(quoted) if language == "r" else "[" + ", ".join(quoted) + "]"
    return (
        template.replace("__NAMES__", names_code)
        .replace("__MARKER__", json.dumps(marker))
        .replace("__MAX_CELLS__", str(int(max_cells)))
        .replace("__HEAD__", str(int(head_rows)))
        .strip()
        + "\n"
    )


def missing(names: Sequence[str], why: str) -> dict[str, VariableSummary]:
    """Summaries for variables that were not inspected, saying why."""
    return {n: VariableSummary(name=n, exists=False, error=why) for n in names}


def parse_inspection(text: str, marker: str, names: Sequence[str],
                     error: str = "") -> dict[str, VariableSummary]:
    """One summary per name from the inspection cell's stdout (``error``: its error)."""
    line = next((ln[len(marker):] for ln in text.splitlines() if ln.startswith(marker)), None)
    if line is None:
        return missing(names, "not inspected: " + (error or "no summary printed"))
    try:
        data: list[dict[str, Any]] = json.loads(line)
        found = {d["name"]: VariableSummary.from_json(d) for d in data}
    except (ValueError, KeyError, TypeError) as exc:
        return missing(names, f"not inspected: unreadable summary ({exc})")
    return {n: found.get(n) or VariableSummary(n, False, error="not inspected") for n in names}


def _bodies(pattern: re.Pattern[str], source: str) -> list[str]:
    return [m.group("body") if m.groupdict().get("raw") else re.sub(r"\\(.)", r"\1", m["body"])
            for m in pattern.finditer(source)]


def string_literals(source: str) -> list[str]:
    """The single-line string literals of Python or R source, escapes undone."""
    return _bodies(_STRING, source)


def chdir_targets(source: str) -> list[str]:
    """Folders named in ``setwd("...")``, ``os.chdir("...")`` and ``%cd ...``."""
    return _bodies(_CHDIR, source) + [m["body"] for m in _CD_MAGIC.finditer(source)]
