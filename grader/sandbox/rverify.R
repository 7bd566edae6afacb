# The verifier of the R bridge (rverify.py): a fresh R process the notebook never touched.
#   Rscript --vanilla rverify.R
# It reads one JSON object per line on stdin and writes its own lines (a secret marker,
# then one JSON object) to stdout, through a connection of its own that sink() and
# the tests' output do not reach. First line in: {"marker": ...}; it answers
# {"op": "ready"}. Then, for each request ({"op": "test" | "inspect", "token": ...}),
# it asks for the student's values ({"op": "export", "names": [...]}, answered by
# {"op": "data", "values": [node...], "packages": [...], "loaded": [...]} or
# {"op": "abort"}) and for calls of the student's functions ({"op": "call", "name",
# "args": hex of serialize(), "deleted": [...]}, answered by {"op": "value", "value":
# node, "error", "printed", "messages", "warnings"} or {"op": "abort"}), and ends with
# {"op": "result", ...} (a test's with "deleted": the names a live test deleted, and
# "shadowed": the notebook's bindings of clean names it set aside). A request may carry
# "clean" ({"packages": [...], "own": [...]}, grader/sandbox/clean_names.py): the
# packages the solution attaches are attached here, the test's own library() calls too,
# before the student's names are read, so that a name R finds there (base, the
# solution's packages) is R's, never the notebook's (a `near <- function(...) TRUE`
# with dplyr detached); `own` names (the solution binds them: deliverables) stay the
# student's. Values arrive as nodes (see rkernel.R), decoded here into
# atomic vectors and lists only: no closure, environment or language object of the
# student's ever exists in this process, and none of the student's S3 methods.
V <- new.env()
local(envir = V, {
  input <- file("stdin", open = "r")
  proto <- tryCatch(file("/dev/stdout", open = "w"), error = function(e) stdout())
  marker <- ""
  token <- ""
  stored <- character(0)
  current <- NULL
  CONDITIONS <- c("condition", "error", "warning", "message", "interrupt")
  IGNORED <- c("IRkernel", "IRdisplay", "pbdZMQ", "repr", "evaluate", "uuid", "compiler")

  send_raw <- function(json) {
    cat("\n", marker, json, "\n", sep = "", file = proto)
    flush(proto)
  }
  send <- function(msg) send_raw(as.character(jsonlite::toJSON(
    msg, auto_unbox = TRUE, null = "null", digits = NA)))
  receive <- function() {
    line <- readLines(input, n = 1L, warn = FALSE)
    if (!length(line)) quit(save = "no", status = 0L)
    jsonlite::fromJSON(line, simplifyVector = TRUE, simplifyDataFrame = FALSE,
                       simplifyMatrix = FALSE)
  }

  # -- decoding the kernel's data ---------------------------------------------------
  at <- function(i) as.integer(unlist(i))
  hexraw <- function(h) {
    n <- nchar(h)
    if (!n) return(raw(0))
    as.raw(strtoi(substring(h, seq.int(1L, n, 2L), seq.int(2L, n, 2L)), 16L))
  }
  dbl <- function(n) {
    v <- as.double(unlist(n$v))
    v[at(n$na)] <- NA
    v[at(n$nan)] <- NaN
    v[at(n$inf)] <- Inf
    v[at(n$ninf)] <- -Inf
    v
  }
  tag <- function(key, value) stats::setNames(list(value), key)
  decode <- function(n, depth = 0L) {
    if (depth > 64L) stop("the data is nested too deeply")
    t <- n$t
    if (!is.character(t) || length(t) != 1L) stop("an unreadable value")
    x <- switch(t,
      "NULL" = return(NULL),
      "function" = return(tag("$fn", "function")),
      opaque = return(tag("$opaque", as.character(decode(n$class, depth + 1L))[1])),
      logical = { v <- as.logical(unlist(n$v)); v[at(n$na)] <- NA; v },
      integer = { v <- as.integer(unlist(n$v)); v[at(n$na)] <- NA; v },
      double = dbl(n),
      complex = complex(real = dbl(n$re), imaginary = dbl(n$im)),
      character = { v <- as.character(unlist(n$v)); v[at(n$na)] <- NA; v },
      raw = hexraw(n$h),
      list = lapply(n$v, decode, depth + 1L),
      stop("an unreadable value"))
    if (is.null(n$an)) return(x)
    keys <- decode(n$an, depth + 1L)
    vals <- lapply(n$av, decode, depth + 1L)
    if (!is.character(keys) || length(keys) != length(vals) || anyNA(keys))
      stop("unreadable attributes")
    names(vals) <- keys
    if (!is.null(vals$class)) {  # never a condition or a testthat expectation
      cl <- as.character(vals$class)
      cl <- cl[!(cl %in% CONDITIONS | startsWith(cl, "expectation") | startsWith(cl, "rlang_"))]
      vals["class"] <- if (length(cl)) list(cl) else list(NULL)
    }
    attributes(x) <- vals
    x
  }
  broken <- function(n) !is.null(n$error)
  why <- function(n) paste(as.character(decode(n$error)), collapse = " ")

  # -- the student's kernel, through rverify.py ------------------------------------
  export <- function(names, describe, clean) {
    send(list(op = "export", token = token, names = I(names), describe = describe))
    got <- receive()
    if (!identical(got$op, "data")) invokeRestart("grader_abort")
    mirror(if (is.null(clean)) as.character(unlist(got$packages)) else character(0),
           as.character(unlist(got$loaded)))
    got$values
  }
  attach_all <- function(packages) {  # in this order, as library() calls attach them
    for (p in setdiff(packages, c(IGNORED, sub("^package:", "", search()))))
      try(suppressMessages(suppressWarnings(library(p, character.only = TRUE))), silent = TRUE)
  }
  mirror <- function(attached, loaded) {  # the packages the notebook uses, ours
    for (p in setdiff(loaded, c(IGNORED, loadedNamespaces())))
      try(suppressMessages(requireNamespace(p, quietly = TRUE)), silent = TRUE)
    attach_all(rev(attached))
  }
  # The clean namespace: base R, the packages the solution attaches (clean$packages)
  # and those the test attaches itself, attached HERE, before any of the student's
  # names is read. Without one (an older caller), the packages the notebook attached.
  prepare <- function(clean, exprs) {
    if (is.null(clean)) return(character(0))
    attach_all(c(as.character(unlist(clean$packages)), attaching(exprs)))
    as.character(unlist(clean$own))
  }
  attaching <- function(exprs) {  # library(x) / require("x") anywhere in the code
    out <- character(0)
    walk <- function(x) {
      f <- x[[1L]]
      if (is.call(f) && length(f) == 3L && identical(f[[1L]], as.symbol("::"))) f <- f[[3L]]
      if (is.symbol(f) && as.character(f) %in% c("library", "require") && length(x) >= 2L &&
          (is.symbol(x[[2L]]) || is.character(x[[2L]])))
        out <<- c(out, as.character(x[[2L]]))
      parts <- as.list(x)
      for (i in seq_along(parts)) if (is.call(parts[[i]])) walk(parts[[i]])
    }
    for (i in seq_along(exprs)) if (is.call(exprs[[i]])) walk(exprs[[i]])
    unique(out)
  }
  assigned <- function(exprs) {  # what the test's top level binds itself
    out <- character(0)
    for (i in seq_along(exprs)) {
      e <- exprs[[i]]
      if (is.call(e) && length(e) == 3L && is.symbol(e[[1L]]) &&
          as.character(e[[1L]]) %in% c("<-", "=", "<<-") && is.symbol(e[[2L]]))
        out <- c(out, as.character(e[[2L]]))
    }
    out
  }
  prep <- function(x) {  # arguments for the notebook's function, as data
    if (is.function(x)) {
      p <- attr(x, "grader_proxy")
      if (!is.null(p)) return(structure(list(p), class = "grader_fnref"))
      return(structure(list(paste(deparse(x), collapse = "\n")), class = "grader_fnsrc"))
    }
    if (is.list(x) && is.null(oldClass(x))) return(lapply(x, prep))
    x
  }
  call_kernel <- function(name, args) {
    deleted <- if (is.null(current)) character(0) else
      setdiff(stored, ls(current, all.names = TRUE))
    hex <- paste(as.character(serialize(prep(args), NULL)), collapse = "")
    send(list(op = "call", token = token, name = name, args = hex, deleted = I(deleted)))
    got <- receive()
    if (!identical(got$op, "value")) invokeRestart("grader_abort")
    printed <- as.character(unlist(got$printed))
    if (length(printed)) cat(paste0(printed, "\n"), sep = "")
    for (m in as.character(unlist(got$messages))) message(sub("\n$", "", m))
    for (w in as.character(unlist(got$warnings))) warning(w, call. = FALSE)
    err <- as.character(unlist(got$error))
    if (length(err)) stop(err[1], call. = FALSE)
    if (broken(got$value)) stop(paste("its value could not be read:", why(got$value)), call. = FALSE)
    decode(got$value)
  }
  proxy <- function(name) {
    force(name)
    structure(function(...) call_kernel(name, list(...)), grader_proxy = name)
  }
  # What a name means in the clean namespace (``lookups``: environments searched in
  # order, the last with its parents): NULL when it is not clean (the student's, or
  # nobody's, or one the solution binds itself: ``own``), else list(value).
  clean_value <- function(n, lookups, own) {
    if (n %in% own) return(NULL)
    for (i in seq_along(lookups)) {
      last <- i == length(lookups)
      if (exists(n, envir = lookups[[i]], inherits = last))
        return(list(get(n, envir = lookups[[i]], inherits = last)))
    }
    NULL
  }
  # The student's values into env: data as data, functions as proxies, except where the
  # name is clean and R would find the clean one: a function for a function (R's own
  # or the solution's package's is used, and the note says so), any binding for a clean
  # value (T, pi, letters). A value named like a clean function stays (R's calls pass
  # over values). ``shadowed``: the notebook's bindings set aside, other than the clean.
  fill <- function(env, names, values, lookups, own = character(0)) {
    masked <- unreadable <- shadowed <- character(0)
    for (i in seq_along(names)) {
      n <- names[i]
      node <- values[[i]]
      if (identical(node$t, "missing")) next
      clean <- clean_value(n, lookups, own)
      if (identical(node$t, "function")) {
        if (is.null(clean)) assign(n, proxy(n), envir = env)
        else {
          masked <- c(masked, n)
          shadowed <- c(shadowed, n)
        }
      } else if (!is.null(clean) && !is.function(clean[[1L]])) {
        masked <- c(masked, n)
        x <- tryCatch(decode(node), error = function(e) e)
        if (broken(node) || !identical(x, clean[[1L]])) shadowed <- c(shadowed, n)
      } else if (broken(node)) {
        unreadable <- c(unreadable, paste0(n, " (", why(node), ")"))
      } else {
        x <- tryCatch(decode(node), error = function(e) e)
        if (inherits(x, "error")) unreadable <- c(unreadable, paste0(n, " (", conditionMessage(x), ")"))
        else assign(n, x, envir = env)
      }
    }
    list(masked = masked, unreadable = unreadable, shadowed = shadowed)
  }
  aborting <- function(expr) withRestarts(expr, grader_abort = function() list(status = "aborted"))

  # -- tests ---------------------------------------------------------------------------
  run_test <- function(req) {
    code <- as.character(req$code)
    max <- as.integer(req$max)
    exprs <- tryCatch(parse(text = code, keep.source = FALSE), error = function(e) e)
    if (inherits(exprs, "error"))
      return(list(status = "failed", detail = substr(conditionMessage(exprs), 1L, max), note = ""))
    names <- unique(all.names(exprs))
    own <- prepare(req$clean, exprs)
    shield <- new.env(parent = globalenv())
    reporter <- NULL
    if (requireNamespace("testthat", quietly = TRUE)) {
      for (n in getNamespaceExports("testthat"))
        assign(n, getExportedValue("testthat", n), envir = shield)
      reporter <- testthat::ListReporter$new()
    }
    env <- new.env(parent = shield)
    got <- fill(env, names, export(names, FALSE, req$clean),
                list(shield, parent.env(globalenv())), own)
    shadowed <- setdiff(got$shadowed, assigned(exprs))
    note <- if (length(got$masked)) paste0("the notebook redefines ",
      paste(got$masked, collapse = ", "), ": the test used R's own") else ""
    if (length(got$unreadable))
      return(list(status = "unreliable", note = note, shadowed = I(shadowed), detail = substr(paste(
        "the notebook's values could not be read:", paste(got$unreadable, collapse = "; ")), 1L, max)))
    stored <<- ls(env, all.names = TRUE)
    current <<- env
    on.exit(current <<- NULL)
    run <- function() for (e in exprs) eval(e, env)
    detail <- tryCatch({
      if (is.null(reporter)) run() else testthat::with_reporter(reporter, run())
      ""
    }, error = function(e) {
      m <- conditionMessage(e)
      if (nzchar(m)) m else paste(class(e)[1], "raised")
    })
    if (!nzchar(detail) && !is.null(reporter)) {
      for (t in reporter$get_results()) for (r in t$results) {
        if (!inherits(r, "expectation_success") && !nzchar(detail))
          detail <- paste0(t$test, ": ", conditionMessage(r))
      }
    }
    # a live test's deletions: what it had of the notebook's and no longer has
    gone <- if (isTRUE(req$live)) setdiff(stored, ls(env, all.names = TRUE)) else character(0)
    list(status = if (nzchar(detail)) "failed" else "passed", detail = substr(detail, 1L, max),
         note = note, deleted = I(gone), shadowed = I(shadowed))
  }

  # -- inspection: the summaries inspect_code.py's R code makes, from the data ---------
  stats_of <- function(v, prefix) {
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
  vec <- function(v) {
    if (is.factor(v)) v <- as.character(v)
    if (inherits(v, c("Date", "POSIXt", "difftime", "hms"))) v <- format(v)
    unname(as.vector(v))
  }
  summarise <- function(s, x, max_cells, head_n) {
    if (is.data.frame(x)) {
      s$type <- if (inherits(x, "tbl_df")) "tbl_df" else "data.frame"
      d <- as.data.frame(x, stringsAsFactors = FALSE)
      rownames(d) <- NULL
      s$shape <- I(dim(d))
      s$columns <- I(names(d))
      s$dtypes <- I(unname(vapply(d, function(col) class(col)[1], "")))
      s$values <- if (nrow(d) * ncol(d) <= max_cells) d else NULL
      s$head <- utils::head(d, head_n)
      st <- list()
      for (col in names(d)) st <- c(st, stats_of(d[[col]], paste0(col, ":")))
      s$summary <- st
    } else if (is.atomic(x) && !is.null(dim(x))) {
      s$shape <- I(dim(x))
      s$dtypes <- I(typeof(x))
      s$values <- if (length(x) <= max_cells) unname(x) else NULL
      s$head <- unname(x[seq_len(min(nrow(x), head_n)), , drop = FALSE])
      s$summary <- stats_of(x, "")
    } else if (is.atomic(x) || is.factor(x)) {
      s$shape <- I(length(x))
      s$dtypes <- I(class(x)[1])
      s$values <- if (length(x) <= max_cells) vec(x) else NULL
      s$head <- vec(utils::head(x, head_n))
      s$summary <- stats_of(x, "")
    } else if (is.list(x)) {
      s$shape <- I(length(x))
      if (!is.null(names(x))) s$columns <- I(names(x))
      s$values <- if (length(x) <= max_cells) x else NULL
      s$head <- utils::head(x, head_n)
    } else {
      s$head <- paste(utils::capture.output(print(x)), collapse = "\n")
    }
    s
  }
  one <- function(name, node, env, max_cells, head_n) {
    if (startsWith(name, "=")) {  # an instructor's expression, evaluated here
      x <- tryCatch(eval(parse(text = substring(name, 2)), envir = env),
                    error = function(e) structure(list(conditionMessage(e)), class = ".grader_failed"))
      if (inherits(x, ".grader_failed"))
        return(list(name = name, exists = FALSE, error = paste("Error:", x[[1]])))
    } else {
      if (identical(node$t, "missing")) return(list(name = name, exists = FALSE))
      if (broken(node)) return(list(name = name, exists = TRUE, error = why(node)))
      if (node$t %in% c("function", "opaque")) {  # an object's class names it, never data's
        type <- if (node$t == "function") "function" else
          paste(as.character(decode(node$class))[1], "(an object, not data)")
        return(list(name = name, exists = TRUE, type = type,
                    head = paste(as.character(decode(node$text)), collapse = "\n")))
      }
      x <- if (exists(name, envir = env, inherits = FALSE)) get(name, envir = env) else decode(node)
    }
    summarise(list(name = name, exists = TRUE, type = class(x)[1]), x, max_cells, head_n)
  }
  as_json <- function(s) as.character(jsonlite::toJSON(
    s, auto_unbox = TRUE, dataframe = "values", na = "null", null = "null", digits = NA,
    force = TRUE))
  run_inspect <- function(req) {
    names <- as.character(unlist(req$names))
    plain <- names[!startsWith(names, "=")]
    used <- unlist(lapply(names[startsWith(names, "=")], function(e)
      tryCatch(all.names(parse(text = substring(e, 2))), error = function(err) character(0))))
    wanted <- unique(c(plain, used))
    own <- prepare(req$clean, parse(text = character(0)))
    values <- export(wanted, TRUE, req$clean)
    env <- new.env(parent = globalenv())
    got <- fill(env, wanted, values, list(parent.env(globalenv())), own)
    parts <- vapply(names, function(name) tryCatch(
      as_json(one(name, if (startsWith(name, "=")) NULL else values[[match(name, wanted)]],
                  env, req$max_cells, req$head)),
      error = function(e) as_json(list(name = name, exists = TRUE, error = conditionMessage(e)))
    ), "")
    list(summaries = paste0("[", paste(parts, collapse = ","), "]"),
         shadowed = intersect(got$shadowed, used))
  }

  serve <- function() {
    hello <- receive()
    marker <<- as.character(hello$marker)
    send(list(op = "ready"))
    repeat {
      req <- receive()
      token <<- as.character(req$token)
      res <- tryCatch(aborting(switch(as.character(req$op),
                                      test = run_test(req), inspect = run_inspect(req),
                                      list(status = "error", detail = "an unknown request"))),
                      error = function(e) list(status = "error", detail = conditionMessage(e)))
      if (!is.null(res$summaries)) {
        send_raw(paste0('{"op":"result","token":', jsonlite::toJSON(token, auto_unbox = TRUE),
                        ',"summaries":', res$summaries, ',"shadowed":',
                        jsonlite::toJSON(as.character(res$shadowed)), "}"))
      } else {
        send(c(list(op = "result", token = token), res))
      }
    }
  }
})
V$serve()
