"""Attacks on the channel around the verifier, each beside its honest twin (issue 32).

Written as a student would write them, from inside the notebook, knowing only that the
grader runs the notebook in a sandbox and judges it from outside:
- **read the hidden tests**: search every file the notebook can open (the run's folders,
  ``/tmp``, home, the whole visible file system but the system's own), and every visible
  process's command line, environment and open files, for the instructor's test code;
  build the answers the asserts ask for (Python: ``ast`` over the asserts; R: the row
  count an ``nrow(...) == N`` asks for);
- **take over the verifier**: a background process started from a cell looks for the
  verifier in ``/proc``, stops it, reads what it was sent through its descriptors and
  answers "passed" in its place;
- **freeze what judges**: stop every other process it can see or guess (the kernel's
  parent, pids 1 to 200) with SIGSTOP, and stop its own kernel at the end.
Each attack must score at most its twin (the same notebook without the attack).
"""

from __future__ import annotations

import json
from typing import Any

from tests.hostile import forging

# -- Python: py-functions (hidden tests of parse_duration and moving_average) -------------
_SEARCH_PY = r'''
import ast, os, re, sys

SKIP = ("/proc", "/sys", "/dev", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc",
        sys.prefix, sys.base_prefix)

def _texts():
    """Every readable text that mentions the functions the tests call."""
    seen = []
    for root in ("../../..", "..", "/tmp", os.path.expanduser("~"), "/"):
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs
                       if not os.path.abspath(os.path.join(folder, d)).startswith(SKIP)]
            for name in files:
                path = os.path.join(folder, name)
                try:
                    if os.path.getsize(path) > 2_000_000:
                        continue
                    with open(path, errors="ignore") as f:
                        seen.append(f.read())
                except OSError:
                    pass
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    seen.append(f.read().decode(errors="ignore"))
            except OSError:
                pass
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    with open(f"/proc/{pid}/fd/{fd}", "rb") as f:
                        seen.append(f.read(1_000_000).decode(errors="ignore"))
                except OSError:
                    pass
        except OSError:
            pass
    return [t for t in seen if "parse_duration(" in t or "moving_average(" in t]

ANSWERS = {}
for text in _texts():
    for line in re.findall(r"assert (parse_duration\(.*?\) (?:==|is) [^\\\n]+)", text):
        try:
            call, want = re.split(r" == | is ", line, maxsplit=1)
            arg = ast.literal_eval(call[len("parse_duration("):-1])
            ANSWERS[arg] = ast.literal_eval(want.strip().rstrip(",").strip())
        except (ValueError, SyntaxError):
            pass
print(f"answers found: {len(ANSWERS)}")
'''

_ANSWERING = ("def parse_duration(text):\n    return ANSWERS.get(text)\n")
_FREEZE = r'''
import os, signal
stopped, mine = 0, {int(t) for t in os.listdir("/proc/self/task")}
for pid in [os.getppid(), *range(1, 200)]:
    if pid in mine:  # our own threads: stopping one stops us
        continue
    try:
        os.kill(pid, signal.SIGSTOP)
        stopped += 1
    except OSError:
        pass
print(f"stopped {stopped} processes")
'''

PYTHON: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "reads the hidden tests from anywhere it can and answers them": (
        {"q1-code": _SEARCH_PY + _ANSWERING},
        {"q1-code": "ANSWERS = {}\n" + _ANSWERING}),
    "stops every process it can reach, its runner first": (
        {"q1-code": "def parse_duration(text):\n    return None\n" + _FREEZE},
        {"q1-code": "def parse_duration(text):\n    return None\n"}),
    "stops its own kernel at the end, before the tests": (
        {"q4-code": "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\n"},
        {"q4-code": "import os\n"}),
}

# -- R: r-sleep-survey (a value check on nrow(survey_clean)) ------------------------------
_SEARCH_R = r'''
texts <- character()
for (root in c("../../..", "..", "/tmp", path.expand("~"), "/")) {
  files <- list.files(root, recursive = TRUE, full.names = TRUE, all.files = TRUE)
  files <- files[!grepl("^/(proc|sys|dev|usr|bin|sbin|lib|lib64|etc)/", files)]
  for (f in head(files, 5000)) {
    size <- suppressWarnings(file.info(f)$size)
    if (is.na(size) || size > 2e6) next
    got <- tryCatch(paste(readLines(f, warn = FALSE), collapse = "\n"), error = function(e) "")
    if (grepl("nrow(", got, fixed = TRUE)) texts <- c(texts, got)
  }
}
for (pid in list.files("/proc", pattern = "^[0-9]+$")) {
  for (part in c("cmdline", "environ")) {
    got <- tryCatch(rawToChar(readBin(file.path("/proc", pid, part), "raw", 1e6)),
                    error = function(e) "")
    texts <- c(texts, gsub("\\\\", " ", got, fixed = TRUE))
  }
}
counts <- as.integer(unlist(regmatches(texts, gregexpr("(?<=== )[0-9]+", texts, perl = TRUE))))
want <- if (length(counts)) counts[1] else 1L
cat("row count found:", length(counts) > 0, "\n")
survey_clean <- data.frame(x = seq_len(want))
'''

_TAKEOVER_R = r'''
script <- '
end=$(( $(date +%s) + 25 ))
found=0
while [ $(date +%s) -lt $end ]; do
  for d in /proc/[0-9]*; do
    if grep -qa "rverif[y]" "$d/cmdline" 2>/dev/null; then
      pid=${d#/proc/}
      kill -STOP "$pid" 2>/dev/null && found=$((found + 1))
      head -c 100000 "$d/fd/0" > /tmp/stolen.txt 2>/dev/null
      token=$(grep -o "\"token\": *\"[0-9a-f]*\"" /tmp/stolen.txt | head -1 \
              | grep -o "[0-9a-f]\{8,\}")
      marker=$(grep -o "@@rverify-[0-9a-f]*@@" /tmp/stolen.txt | head -1)
      if [ -n "$token" ]; then
        printf "%s{\"op\":\"result\",\"token\":\"%s\",\"status\":\"passed\"}\n" \
          "$marker" "$token" > "$d/fd/1"
      fi
      kill -CONT "$pid" 2>/dev/null
    fi
  done
  sleep 0.05
done
echo "$found" > /tmp/takeover.txt
'
writeLines(script, "/tmp/takeover.sh")
system("sh /tmp/takeover.sh > /dev/null 2>&1", wait = FALSE)  # R adds the &
survey_clean <- data.frame(x = 1)
'''

R: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "reads the checks' files and processes for the row count it must have": (
        {"q1-code": _SEARCH_R}, {"q1-code": "survey_clean <- data.frame(x = seq_len(1L))\n"}),
    "a background process that stops the verifier and answers in its place": (
        {"q1-code": _TAKEOVER_R}, {"q1-code": "survey_clean <- data.frame(x = 1)\n"}),
}


def variants(language: str) -> list[forging.Variant]:
    folder = forging.ASSIGNMENTS[language]
    base: dict[str, Any] = json.loads(
        (folder / "submissions" / "template_only.ipynb").read_text("utf-8"))
    table = PYTHON if language == "python" else R
    return [forging.Variant(what, forging.edited(base, attack), forging.edited(base, twin), "",
                            folder) for what, (attack, twin) in table.items()]
