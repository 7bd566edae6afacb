# The kernel side of the R bridge (rverify.py): run as a hidden cell before the
# student's first cell. It binds, under a random name in the global environment, a
# closure that exports the student's values as DATA and calls the student's functions,
# printing one line: a marker and a JSON object. Every function the closure uses is
# captured now, before any student code runs, in an environment whose parent is the
# empty environment, so masking in the global environment, assignInNamespace or a
# replaced jsonlite cannot change what it calls. It also keeps the functions of base,
# utils and jsonlite as they are now, and reports at each export those replaced since.
# Placeholders (filled by rverify.py): __NAME__, __MARKER__, __LIMIT__.
# Wire format of a value (a "node"), read by rverify.py and rverify.R:
#   {"t":"NULL"} | {"t":"missing"} | {"t":"function"[,"text":chr]}
#   {"t":"opaque","class":chr[,"text":chr][,"error":chr]}
#   {"t":"logical"|"integer"|"double","v":[...],"na":[i..],"nan":[..],"inf":[..],"ninf":[..]}
#   {"t":"character","n":[byte lengths, -1 for NA],"h":"hex of the UTF-8 bytes"}
#   {"t":"complex","re":node,"im":node} | {"t":"raw","h":hex} | {"t":"list","v":[node..]}
#   each with "an":chr (attribute names) and "av":[node..] (their values) when it has any.
base::local({
  src <- r"---(
hexraw <- function(h) {
  n <- nchar(h)
  if (n == 0L) return(raw(0))
  as.raw(strtoi(substring(h, seq.int(1L, n, 2L), seq.int(2L, n, 2L)), 16L))
}
unhex <- function(h) rawToChar(hexraw(h))
idx <- function(key, i) if (length(i)) paste0(',"', key, '":[', paste(i, collapse = ","), "]") else ""
chr <- function(s) paste0("{", chars(s), "}")
chars <- function(s) {
  s <- as.character(s)
  na <- is.na(s)
  y <- enc2utf8(s)
  y[na] <- ""
  lens <- nchar(y, type = "bytes")
  lens[na] <- -1L
  every <- paste(y, collapse = "")
  h <- if (nchar(every, type = "bytes") > 0L) paste(as.character(charToRaw(every)), collapse = "") else ""
  paste0('"t":"character","n":[', paste(lens, collapse = ","), '],"h":"', h, '"')
}
num <- function(v) {
  s <- sprintf("%.17g", v)
  s[!is.finite(v)] <- "0"
  paste0('"t":"double","v":[', paste(s, collapse = ","), "]",
         idx("na", which(is.na(v) & !is.nan(v))), idx("nan", which(is.nan(v))),
         idx("inf", which(v == Inf)), idx("ninf", which(v == -Inf)))
}
count <- function(st, n) {
  st$n <- st$n + n
  if (st$n > LIMIT) stop(paste("more than", LIMIT, "values: too large to export"))
}
atoms <- function(v, t, st) {
  count(st, length(v))
  if (t == "character") return(chars(v))
  if (t == "double") return(num(v))
  if (t == "complex") return(paste0('"t":"complex","re":{', num(Re(v)), '},"im":{', num(Im(v)), "}"))
  if (t == "raw") return(paste0('"t":"raw","h":"', paste(as.character(v), collapse = ""), '"'))
  na <- which(is.na(v))
  if (t == "logical") {
    s <- rep.int("false", length(v))
    s[which(v)] <- "true"
  } else {
    s <- as.character(v)
    s[na] <- "0"
  }
  paste0('"t":"', t, '","v":[', paste(s, collapse = ","), "]", idx("na", na))
}
printed <- function(x) tryCatch(paste(capture.output(print(x)), collapse = "\n"),
                                error = function(e) paste("<cannot print:", conditionMessage(e), ">"))
said <- function(x, describe) if (describe) paste0(',"text":', chr(printed(x))) else ""
opaque <- function(x, describe) paste0('{"t":"opaque","class":', chr(class(x)), said(x, describe), "}")
KINDS <- c("logical", "integer", "double", "complex", "character", "raw", "list")
enc <- function(x, depth, describe, st) {
  if (is.function(x)) return(paste0('{"t":"function"', said(x, describe), "}"))
  t <- typeof(x)
  if (t == "NULL") return('{"t":"NULL"}')
  if (depth > 40L || isS4(x) || !match(t, KINDS, 0L)) return(opaque(x, describe))
  a <- attributes(x)
  v <- x
  attributes(v) <- NULL
  core <- if (t == "list") {
    count(st, length(v))
    parts <- vapply(v, function(e) enc(e, depth + 1L, FALSE, st), "")
    paste0('"t":"list","v":[', paste(parts, collapse = ","), "]")
  } else atoms(v, t, st)
  if (!is.null(a)) {
    if (!is.null(a[["row.names"]]) && is.list(x)) a[["row.names"]] <- .row_names_info(x, 0L)
    parts <- vapply(a, function(e) enc(e, depth + 1L, FALSE, st), "")
    core <- paste0(core, ',"an":', chr(names(a)), ',"av":[', paste(parts, collapse = ","), "]")
  }
  paste0("{", core, "}")
}
message_of <- function(e) tryCatch(paste(as.character(conditionMessage(e)), collapse = "\n"),
                                   error = function(e2) "a condition whose message cannot be read")
failed <- function(e) paste0('{"t":"opaque","class":', chr("error"), ',"error":', chr(message_of(e)), "}")
one <- function(name, describe, st) {
  if (!exists(name, envir = G, inherits = FALSE)) return('{"t":"missing"}')
  tryCatch(enc(get(name, envir = G, inherits = FALSE), 0L, describe, st), error = failed)
}
fix <- function(x) {
  if (inherits(x, "grader_fnref")) return(get(x[[1L]], envir = G, mode = "function"))
  if (inherits(x, "grader_fnsrc")) return(eval(parse(text = x[[1L]], keep.source = FALSE), G))
  if (is.list(x) && is.null(oldClass(x)))
    for (i in seq_along(x)) if (!is.null(x[[i]])) x[[i]] <- fix(x[[i]])
  x
}
call_student <- function(name, argsraw, deleted, st) {
  f <- get0(name, envir = G, mode = "function", inherits = FALSE)
  if (is.null(f)) stop(paste0("the notebook has no function ", name))
  args <- fix(unserialize(argsraw))
  saved <- list()
  for (d in deleted) if (exists(d, envir = G, inherits = FALSE)) {
    saved[d] <- list(get(d, envir = G, inherits = FALSE))
    rm(list = d, envir = G)
  }
  on.exit(for (d in names(saved)) assign(d, saved[[d]], envir = G))
  err <- character(0)
  msgs <- character(0)
  warns <- character(0)
  value <- NULL
  out <- capture.output(value <- withCallingHandlers(
    tryCatch(do.call(f, args, envir = G), error = function(e) {
      err <<- message_of(e)
      NULL
    }),
    warning = function(w) {
      warns <<- c(warns, message_of(w))
      invokeRestart("muffleWarning")
    },
    message = function(m) {
      msgs <<- c(msgs, message_of(m))
      invokeRestart("muffleMessage")
    }))
  value <- if (length(err)) '{"t":"NULL"}' else tryCatch(enc(value, 0L, FALSE, st), error = failed)
  paste0(',"value":', value, ',"error":', chr(err), ',"printed":', chr(out),
         ',"messages":', chr(msgs), ',"warnings":', chr(warns))
}
replaced <- function() {
  r <- character(0)
  for (k in names(SNAP)) {
    s <- SNAP[[k]]
    now <- mget(names(s$fns), envir = s$env, ifnotfound = list(NULL), inherits = FALSE)
    for (n in names(s$fns)) if (!identical(now[[n]], s$fns[[n]])) r <- c(r, paste0(k, "::", n))
  }
  if (!identical(get0(NAME, envir = G, inherits = FALSE), main)) r <- c(r, NAME)
  r
}
main <- function(...) {
  a <- list(...)
  done <- FALSE
  on.exit(if (!done) cat("\n", MARKER, '{"aborted":true}', "\n", sep = "", file = CON))
  st <- new.env()
  st$n <- 0
  body <- tryCatch({
    op <- unhex(a[[1L]])
    gone <- replaced()
    top <- paste0('"canary":[', chr(unhex(a[[2L]])), ",{", num(as.numeric(unhex(a[[3L]]))), "}]",
                   ',"replaced":', chr(gone), ',"bound":', chr(gone[match(gone, BOUND, 0L) > 0L]))
    rest <- if (length(a) > 3L) a[4:length(a)] else list()
    if (op == "export") {
      wanted <- vapply(rest[-1L], unhex, "")
      describe <- unhex(rest[[1L]]) == "1"
      vals <- vapply(wanted, function(n) one(n, describe, st), "")
      pk <- search()
      pk <- substring(pk[startsWith(pk, "package:")], 9L)
      paste0(top, ',"values":[', paste(vals, collapse = ","), '],"packages":', chr(pk),
             ',"loaded":', chr(loadedNamespaces()))
    } else if (op == "call") {
      paste0(top, call_student(unhex(rest[[1L]]), hexraw(rest[[2L]]),
                                vapply(rest[-(1:2)], unhex, ""), st))
    } else if (op == "forget") {  # a live test's deletions (its own rm), made here
      for (n in vapply(rest, unhex, "")) if (exists(n, envir = G, inherits = FALSE)) rm(list = n, envir = G)
      top
    } else stop("an unknown request")
  }, error = function(e) paste0('"failed":', chr(message_of(e))))
  done <- TRUE
  cat("\n", MARKER, "{", body, "}", "\n", sep = "", file = CON)
  invisible(NULL)
}
)---"
  exprs <- base::parse(text = src, keep.source = FALSE)
  E <- base::new.env(parent = base::emptyenv())
  utils_ns <- base::asNamespace("utils")
  bound <- base::character()
  used <- base::unique(base::all.names(exprs))
  for (n in base::c(used, base::paste0(used, "<-"))) {
    for (pkg in base::c("base", "utils")) {
      env <- if (pkg == "base") base::baseenv() else utils_ns
      if (!base::exists(n, envir = env, inherits = FALSE)) next
      f <- base::get(n, envir = env)
      base::assign(n, f, envir = E)
      if (base::is.function(f)) bound <- base::c(bound, base::paste0(pkg, "::", n))
      break
    }
  }
  snap <- base::list()
  for (pkg in base::c("base", "utils", "jsonlite")) {
    if (!pkg %in% base::loadedNamespaces()) next
    env <- if (pkg == "base") base::baseenv() else base::asNamespace(pkg)
    keys <- base::ls(env, all.names = TRUE)
    fns <- base::mget(keys, envir = env)
    snap[[pkg]] <- base::list(env = env, fns = fns[base::vapply(fns, base::is.function, TRUE)])
  }
  E$SNAP <- snap
  E$BOUND <- bound
  E$G <- base::globalenv()
  E$CON <- base::stdout()
  E$NAME <- "__NAME__"
  E$MARKER <- "__MARKER__"
  E$LIMIT <- __LIMIT__
  for (e in exprs) base::eval(e, E)
  base::lockEnvironment(E, bindings = TRUE)
  base::assign("__NAME__", E$main, envir = base::globalenv())
  base::lockBinding("__NAME__", base::globalenv())
  base::invisible(NULL)
})
