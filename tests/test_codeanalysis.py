"""Layer 1 code facts: assignments and calls from the syntax, never from comments or strings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.analysis import rlang
from grader.analysis.facts import (
    CodeFacts,
    analyse,
    assigned,
    called,
    normalise_code,
    strip_comments,
)

COURSE_R = Path("/work/shared/course-r")


def names(facts: CodeFacts, kind: str = "assign") -> list[str]:
    symbols = facts.assigned if kind == "assign" else facts.calls
    return [s.name for s in symbols]


# --- Python ---------------------------------------------------------------------------------


def test_python_comments_and_strings_do_not_count() -> None:
    code = (
        "# orders = pd.read_csv('orders.csv')\n"
        "note = 'revenue = sum(x)'\n"
        'doc = """\nmerged = pd.merge(a, b)\n"""\n'
        "total = 1  # profit = compute()\n"
    )
    facts = analyse(code, "python")
    assert names(facts) == ["note", "doc", "total"]
    assert facts.calls == ()
    assert not called(facts, "read_csv")
    assert not called(facts, "merge")
    assert not assigned(facts, "orders")


def test_python_tuple_unpacking_and_starred() -> None:
    facts = analyse("train, (test, *rest) = split(df)\nfirst, *others = items\n", "python")
    assert names(facts) == ["train", "test", "rest", "first", "others"]
    assert [s.line for s in assigned(facts, "others")] == [2]


def test_python_subscript_and_attribute_assignment_record_the_base() -> None:
    facts = analyse(
        'df["total"] = df.price * df.qty\ndf.loc[0, "x"] = 1\nobj.attr += 2\n', "python"
    )
    assert names(facts) == ["df", "df", "obj"]
    symbol = assigned(facts, "df")[0]
    assert (symbol.line, symbol.kind, symbol.text) == (
        1,
        "assign",
        'df["total"] = df.price * df.qty',
    )


def test_python_other_assignment_forms() -> None:
    code = (
        "n: int = 3\n"
        "m: int\n"
        "if (size := len(df)) > 2:\n    pass\n"
        "for row in rows:\n    acc += row\n"
        "with open('f') as fh:\n    pass\n"
        "squares = [k * k for k in range(3)]\n"
        "import numpy as np\n"
        "def helper():\n    pass\n"
        "class Model:\n    pass\n"
    )
    facts = analyse(code, "python")
    assert names(facts) == ["n", "size", "acc", "squares", "helper", "Model"]
    for skipped in ("m", "row", "fh", "k", "np"):
        assert not assigned(facts, skipped)


def test_python_method_chains_find_each_method() -> None:
    code = 'summary = (df.groupby("region")\n  .sum()\n  .mean())\nx = df["a"].mean()\n'
    facts = analyse(code, "python")
    assert "df.groupby" in names(facts, "call")
    assert "df.groupby().sum" in names(facts, "call")
    assert [s.line for s in called(facts, "groupby")] == [1]
    assert [s.line for s in called(facts, "sum")] == [2]
    assert [s.line for s in called(facts, "mean")] == [3, 4]
    assert [s.text for s in called(facts, "mean")] == [".mean())", 'x = df["a"].mean()']


def test_python_called_suffix_and_qualified_rules() -> None:
    facts = analyse("a = pd.read_csv('x')\nb = pandas.read_csv('y')\nc = read_csv('z')\n", "python")
    assert [s.line for s in called(facts, "read_csv")] == [1, 2, 3]
    assert [s.line for s in called(facts, "pd.read_csv")] == [1]
    assert not called(facts, "csv")
    assert not called(facts, "np.read_csv")


def test_python_magics_and_shell_escapes_do_not_break_parsing() -> None:
    code = (
        "%matplotlib inline\n"
        "!pip install seaborn\n"
        "files = !ls data\n"
        "df?\n"
        "%time totals = df.sum()\n"
        "for col in cols:\n    %timeit df[col].mean()\n"
        "orders = pd.read_csv('orders.csv')\n"
    )
    facts = analyse(code, "python")
    assert facts.syntax_error is None
    assert names(facts) == ["files", "totals", "orders"]
    assert [s.line for s in called(facts, "read_csv")] == [8]
    assert called(facts, "mean")[0].line == 7
    assert not called(facts, "install")


def test_python_cell_magic() -> None:
    timed = analyse("%%time\nresult = model.fit(X, y)\n", "python")
    assert (timed.syntax_error, names(timed)) == (None, ["result"])
    assert called(timed, "fit")[0].line == 2
    shell = analyse("%%bash\nx = ls(1)\n", "python")
    assert (shell.syntax_error, shell.assigned, shell.calls) == (None, (), ())


def test_python_syntax_error_falls_back_to_tokens() -> None:
    code = (
        "clean = df.dropna(\n"
        "orders = pd.read_csv('orders.csv')  # total = f(1)\n"
        "if x = 3:\n"
        "    a, *b = split(df)\n"
        "def helper(k=1):\n"
        "print(x == 2)\n"
    )
    facts = analyse(code, "python")
    assert facts.syntax_error is not None
    assert facts.syntax_error.startswith("line ")
    assert names(facts) == ["clean", "orders", "a", "b", "helper"]
    assert names(facts, "call") == ["df.dropna", "pd.read_csv", "split", "print"]
    assert called(facts, "read_csv")[0].text.startswith("orders = pd.read_csv")
    assert facts.literal_assigned == frozenset()


def test_python_unclosed_string_hides_the_rest_of_its_line() -> None:
    facts = analyse("label = 'revenue = sum(x)\nnext_one = g(2)\n", "python")
    assert facts.syntax_error is not None
    assert names(facts) == ["label", "next_one"]
    assert names(facts, "call") == ["g"]


def test_python_literal_assigned() -> None:
    code = (
        "answer = 42\n"
        "ratio = -0.5 * 2\n"
        "name = 'north'\n"
        "table = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})\n"
        "pair = (1, 'a')\n"
        "computed = df.price.sum()\n"
        "frame = pd.DataFrame({'a': df.a})\n"
        "later = 1\nlater = compute()\n"
        "placeholder = None\nellipsis = ...\nacc = []\n"
        "n = 0\nn += 1\n"
        "total = 0\ntotal += price\n"
        "grid = {'a': 1}\ngrid['b'] = f()\n"
    )
    facts = analyse(code, "python")
    assert facts.literal_assigned == {"answer", "ratio", "name", "table", "pair", "n"}


def test_python_code_lines_and_strip_comments() -> None:
    code = "# heading\nx = '#not a comment'  # a comment\n\n    \ny = 2\n"
    assert analyse(code, "python").code_lines == 2
    assert strip_comments(code, "python") == "\nx = '#not a comment'\n\n    \ny = 2\n"


# --- R ----------------------------------------------------------------------------------------


def test_r_comments_and_strings_do_not_count() -> None:
    code = (
        '# orders <- read_csv("orders.csv")\n'
        'note <- "revenue <- sum(x)"\n'
        "other <- 'f(y) # not a comment'\n"
        "total <- 1 # profit <- compute()\n"
    )
    facts = analyse(code, "r")
    assert names(facts) == ["note", "other", "total"]
    assert facts.calls == ()
    assert not assigned(facts, "revenue")
    assert not called(facts, "sum")


def test_r_assignment_operators() -> None:
    code = "a <- 1\nb = 2\n3 -> c\nd <<- 4\n5 ->> e\n(f <- g(1))\n"
    facts = analyse(code, "r")
    assert names(facts) == ["a", "b", "c", "d", "e", "f"]
    assert [s.line for s in assigned(facts, "c")] == [3]


def test_r_named_arguments_are_not_assignments() -> None:
    alone = analyse("df %>% mutate(total = price * qty)\n", "r")
    assert alone.assigned == ()
    assert names(alone, "call") == ["mutate"]
    piped = analyse("result <- df %>% mutate(total = price*qty)\n", "r")
    assert names(piped) == ["result"]
    assert called(piped, "mutate")
    fn = analyse("f <- function(x, y = 2) {\n  z = x + y\n  z\n}\n", "r")
    assert names(fn) == ["f", "z"]


def test_r_qualified_calls_and_pipes() -> None:
    code = (
        "x <- df |> dplyr::filter(a > 1) %>% summarise(n = n())\nread.csv('a')\nstats:::t.test(y)\n"
    )
    facts = analyse(code, "r")
    assert names(facts, "call") == ["dplyr::filter", "summarise", "n", "read.csv", "stats:::t.test"]
    assert [s.name for s in called(facts, "filter")] == ["dplyr::filter"]
    assert called(facts, "dplyr::filter")
    assert not called(facts, "stats::filter")
    assert [s.name for s in called(facts, "read.csv")] == ["read.csv"]
    assert not called(facts, "csv")  # "." is part of an R name
    assert [s.name for s in called(facts, "test")] == []


def test_r_backtick_names_and_raw_strings() -> None:
    code = '`my var` <- 3\n`odd fn`(1)\npattern <- r"(a # b <- c(1))"\nalso <- R"--[x ]" <- y]--"\n'
    facts = analyse(code, "r")
    assert facts.syntax_error is None
    assert names(facts) == ["my var", "pattern", "also"]
    assert names(facts, "call") == ["odd fn"]
    assert facts.code_lines == 4


def test_r_functions_and_keywords_are_not_calls() -> None:
    code = "sq <- function(x) x + 1\nh <- \\(x) x\nif (a) b else c\n"
    code += "for (i in 1:3) print(i)\nwhile (TRUE) break\n"
    facts = analyse(code, "r")
    assert facts.syntax_error is None
    assert names(facts, "call") == ["print"]
    assert names(facts) == ["sq", "h"]


def test_r_replacement_forms_record_the_base() -> None:
    code = 'names(df) <- c("a", "b")\ndf$col <- 1\ndf[1, 2] <- 3\nlevels(data$f)[2] <- "x"\n'
    code += 'assign("made", 5)\nl[["k"]] = 2\n'
    facts = analyse(code, "r")
    assert names(facts) == ["df", "df", "df", "data", "made", "l"]
    assert called(facts, "names")


def test_r_literal_assigned() -> None:
    code = (
        "answer <- 42\nname = 'north'\nvals <- c(1, 2, -3)\n"
        'tb <- tibble(a = c(1, 2), b = "x")\nframe <- data.frame(x = 1:3)\n'
        "computed <- sum(c(1, 2))\nfrom_df <- tibble(a = df$x)\n"
        "nothing <- NULL\nempty <- c()\nlater <- 1\nlater <- f()\n"
        "7 -> seven\nflag <- TRUE\n"
    )
    facts = analyse(code, "r")
    assert facts.literal_assigned == {"answer", "name", "vals", "tb", "frame", "seven", "flag"}


def test_r_syntax_errors_are_reported_and_facts_still_found() -> None:
    facts = analyse('orders <- read_csv "orders.csv"\ntotal <- sum(orders$x\n', "r")
    assert facts.syntax_error is not None
    assert facts.syntax_error.startswith("line 1: unexpected string constant")
    assert names(facts) == ["orders", "total"]
    assert names(facts, "call") == ["sum"]  # read_csv without "(" is not a call
    assert analyse("x <- 'never closed\n", "r").syntax_error == "line 1: string is never closed"
    assert "end of input" in (analyse("x <-\n", "r").syntax_error or "")


def test_r_tokenizer_kinds() -> None:
    code = "x <- 1L + 1e-3 + 0x1F + 2i + .5 %in% y |> f(`a b`) # c\n.hidden <<- TRUE"
    tokens, errors = rlang.tokenize(code)
    assert errors == []
    assert [(t.kind, t.text) for t in tokens] == [
        ("name", "x"), ("op", "<-"), ("num", "1L"), ("op", "+"), ("num", "1e-3"),
        ("op", "+"), ("num", "0x1F"), ("op", "+"), ("num", "2i"), ("op", "+"),
        ("num", ".5"), ("op", "%in%"), ("name", "y"), ("op", "|>"), ("name", "f"),
        ("op", "("), ("name", "`a b`"), ("op", ")"), ("comment", "# c"), ("newline", "\n"),
        ("name", ".hidden"), ("op", "<<-"), ("const", "TRUE"),
    ]  # fmt: skip
    assert tokens[16].value == "a b"
    assert tokens[-1].line == 2


def test_r_strip_comments_keeps_strings_and_lines() -> None:
    code = 'x <- "# kept" # dropped\n# gone\ny <- 2\n'
    assert strip_comments(code, "r") == 'x <- "# kept"\n\ny <- 2\n'
    assert analyse(code, "r").code_lines == 2


# --- normal form --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "one", "two", "different"),
    [
        (
            "python",
            "# Load data\ndf = pd.read_csv('a.csv')\n\n\nx=f( df )  # note\n",
            "df  =  pd.read_csv('a.csv')   # loaded\nx = f(df)",
            "df = pd.read_csv('b.csv')\nx = f(df)",
        ),
        (
            "r",
            "# Load data\ndf <- read_csv('a.csv')\n\n\nx<-f( df )  # note\n",
            "df  <-  read_csv('a.csv')   # loaded\nx <- f(df)",
            "df <- read_csv('a.csv')\nx < -f(df)",
        ),
    ],
)
def test_normalise_code_ignores_comments_and_spacing(
    language: str, one: str, two: str, different: str
) -> None:
    assert normalise_code(one, language) == normalise_code(two, language)
    assert normalise_code(one, language) != normalise_code(different, language)
    assert "\n\n" not in normalise_code(one, language)


def test_normalise_code_keeps_string_contents() -> None:
    assert normalise_code("x = 'a  b'", "python") != normalise_code("x = 'a b'", "python")
    assert normalise_code("x = f(\n", "python") == "x = f("  # does not tokenize


def test_unknown_language_lists_the_choices() -> None:
    with pytest.raises(ValueError, match="python, r"):
        analyse("x = 1", "julia")


# --- the real R course -------------------------------------------------------------------


def course_cells(kind: str) -> list[str]:
    cells = []
    for path in sorted(COURSE_R.glob(f"*/{kind}.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        cells += ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    return cells


@pytest.mark.skipif(not COURSE_R.is_dir(), reason="course material not present")
def test_r_course_solutions() -> None:
    cells = course_cells("solution")
    assert len(cells) > 20
    all_facts = [analyse(cell, "r") for cell in cells]
    assert [f.syntax_error for f in all_facts if f.syntax_error] == []
    assigns = {s.name for f in all_facts for s in f.assigned}
    calls = {s.name for f in all_facts for s in f.calls}
    assert {"customers", "customer_orders", "customer_metrics", "products_clean"} <= assigns
    assert {"library", "read_csv", "inner_join", "group_by", "summarise", "str_detect"} <= calls
    assert {"setwd", "n_distinct", "anti_join", "semi_join"} <= calls
    assert "Total_Spent" not in assigns  # a named argument of summarise()
    assert "Required" not in calls  # "# Required columns: ..." is a comment
    load = next(f for f in all_facts if called(f, "library"))
    assert called(load, "read_csv")[0].text == 'customers <- read_csv("customers.csv")'


@pytest.mark.skipif(not COURSE_R.is_dir(), reason="course material not present")
def test_r_course_templates_comments_give_nothing() -> None:
    all_facts = [analyse(cell, "r") for cell in course_cells("template")]
    assigns = {s.name for f in all_facts for s in f.assigned}
    assert "customer_orders" not in assigns  # only named in "# REQUIRED variable name: ..."
    assert "duplicate_customers" not in assigns  # commented-out code
    errors = [f.syntax_error for f in all_facts if f.syntax_error]
    assert any("unexpected symbol" in e for e in errors)  # VSCode cell markup pasted as code


# --- properties ---------------------------------------------------------------------------

CODEISH = st.text(alphabet=st.sampled_from(list("ab_.x1 \n\t#'\"`%<-=>|(){}[],;:$@!?\\rR")))


@pytest.mark.parametrize("language", ["python", "r"])
@settings(max_examples=200, deadline=None)
@given(code=st.one_of(st.text(), CODEISH))
def test_analyse_never_raises(language: str, code: str) -> None:
    facts = analyse(code, language)
    lines = code.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    assert 0 <= facts.code_lines <= len(lines)
    for symbol in (*facts.assigned, *facts.calls):
        assert 1 <= symbol.line <= len(lines)
    assert strip_comments(code, language).count("\n") == len(lines) - 1
    normalise_code(code, language)
