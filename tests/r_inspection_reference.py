"""The in-kernel R inspection the grader used before values were judged outside the kernel.

Kept in the tests only, as the reference ``tests/test_r_verifier.py`` compares the R
verifier's summaries with: the same conventions, computed in the student's kernel.
"""

import json
from collections.abc import Sequence

__all__ = ["inspection_code"]


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

def inspection_code(language: str, names: Sequence[str], marker: str, max_cells: int = 20_000,
                    head_rows: int = 5) -> str:
    """R source that prints ``marker`` + a JSON array summarising ``names`` (one line)."""
    if language != "r":
        raise ValueError(f"the reference inspection is R's only, not {language!r}")
    names_code = ", ".join(json.dumps(str(n)) for n in names)
    return (_R.replace("__NAMES__", names_code).replace("__MARKER__", json.dumps(marker))
            .replace("__MAX_CELLS__", str(int(max_cells))).replace("__HEAD__", str(int(head_rows)))
            .strip() + "\n")
