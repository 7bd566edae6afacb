"""Layer 2: execution and output checks, against the solution run the same way.

Both the solution and the submission run in the sandbox (``grader.sandbox.execution``);
the variables the rubric names are inspected in each kernel and compared with
the rubric's tolerances. ``runs`` checks count the errors of the student's own
code cells; errors the template itself produces, failures of the environment (a data
file the sandbox could not provide) and a code cell that holds only an answer typed as
plain text (``CellOrigin.prose``: it cannot run, and is no code) are not the student's.

When the instructor turned execution off, ``runs``, ``printed`` and ``plot`` are
scored from the stored outputs, output, value and test checks are marked "skipped" (so
the criterion goes to review), and the report says so. When our run could not be made
(no kernel, no sandbox and unsandboxed runs not allowed, the solution's or the
notebook's run could not be set up), the grade is flagged ``not_executed`` and every
check that needs our run is held for review, earning nothing: stored outputs never
stand unchecked. Stored outputs that disagree with the fresh run in a way that moves a
check are flagged, naming the check, and the check is held for review with the lower
verdict (``grader.layers.stale``).
``test`` checks (the instructor's tests, judged against both notebooks after they ran,
or at the cell a test's ``after`` names) are
scored in ``grader.layers.instructor_tests``. A check the rubric marks ``hidden`` gives a result
marked ``hidden``. A later part's cell that stopped with an error is charged where it
failed, not again in an earlier part's variable it was about to change
(``grader.layers.slips``).
"""

from __future__ import annotations

import re
from dataclasses import replace

from .. import check_types
from ..check_types import L2Scene
from ..packages import run_env, status
from ..rubrics.check_fields import Check
from ..rubrics.schema import Criterion
from ..sandbox.execution import (
    ExecLimits,
    ExecutionResult,
    execute_notebook,
    kernel_available,
    sandbox_available,
)
from ..types import NO_FACTS, CheckResult, CheckStatus, Evidence, Facts, Flag, LayerResult
from .base import AssignmentContext, Layer, SubmissionContext
from .compare import compare_aspects
from .instructor_tests import assignment_names, assignment_tests
from .outputs_read import no_outputs_flag
from .slips import absent_because, charged_where_it_failed
from .stale import (
    held,
    not_executed_flag,
    stale_checks,
    stale_outputs_flag,
    unverified,
)
from .values import inspected_names

# Failures of the environment, not of the student: a package the machine lacks.
_MISSING_PACKAGE = re.compile(r"(ModuleNotFoundError|there is no package called)", re.IGNORECASE)
_MISSING_FILE = re.compile(
    r"(FileNotFoundError|No such file|cannot open file|does not exist|"
    r"cannot change working directory)",
    re.IGNORECASE,
)


def environment_error(error: str, data_names: set[str]) -> bool:
    """True when a failure is the machine's fault, not the student's.

    A missing package, or a missing file whose name is one of the assignment's
    data files (the sandbox maps those wherever the student's code looks, so a
    failure there is ours). A typo'd file name stays the student's error.
    """
    if _MISSING_PACKAGE.search(error):
        return True
    return bool(_MISSING_FILE.search(error)) and any(n in error for n in data_names)


VALUE_ASPECTS = ("values", "rows")  # what a slip upstream changes; the rest is method


def _limits(ctx: SubmissionContext) -> ExecLimits:
    o = ctx.options
    return ExecLimits(
        cell_timeout_s=o.cell_timeout_s,
        total_timeout_s=o.total_timeout_s,
        memory_mb=o.memory_mb,
        allow_unsandboxed=o.allow_unsandboxed,
    )


def solution_run(actx: AssignmentContext, limits: ExecLimits) -> ExecutionResult:
    """The solution's execution, run once per assignment and shared by all submissions."""
    with actx.lock:
        run = actx.cache.get("solution_run")
        if run is None:
            a = actx.assignment
            run = execute_notebook(
                actx.solution_raw, a.language, a.data_files(), inspected_names(a.rubric), limits,
                tests=assignment_tests(actx), env=run_env(a.packages),
                clean=assignment_names(actx),
            )
            actx.cache["solution_run"] = run
            actx.cache["packages_missing"] = status(a.packages).text() if a.packages else ""
        return run


def cannot_execute_reason(ctx: SubmissionContext) -> str:
    lang = ctx.submission.language
    if not ctx.options.execute:
        return "execution disabled"
    if not kernel_available(lang):
        return f"no {lang} kernel is installed"
    if not sandbox_available() and not ctx.options.allow_unsandboxed:
        return "bubblewrap (the sandbox) is not installed and unsandboxed runs are not allowed"
    return ""


class OutputLayer(Layer):
    name = "L2"

    def run(self, ctx: SubmissionContext) -> LayerResult:
        result = LayerResult(self.name)
        if not ctx.match.student_code_lines:
            return self._nothing_to_run(ctx, result)
        reason = cannot_execute_reason(ctx)
        run: ExecutionResult | None = None
        sol: ExecutionResult | None = None
        if not reason:
            limits = _limits(ctx)
            sol = solution_run(ctx.assignment, limits)
            if missing := ctx.assignment.cache.get("packages_missing"):
                result.notes.append(missing)
            if sol.error:
                reason = f"the solution could not be executed: {sol.error}"
            else:
                a = ctx.assignment.assignment
                run = execute_notebook(
                    ctx.raw, a.language, a.data_files(), inspected_names(a.rubric), limits,
                    tests=assignment_tests(ctx.assignment), env=run_env(a.packages),
                    clean=assignment_names(ctx.assignment),
                )
                result.notes.extend(run.notes)
                ctx.execution = run  # its outputs are scanned for injections too
                if run.error:
                    reason = f"the notebook could not be executed: {run.error}"
        # we meant to run it and could not (never the student's doing): what the stored
        # outputs show is not evidence until reviewed
        unmade = reason if reason and ctx.options.execute else ""
        if unmade:
            result.flags.append(not_executed_flag(unmade))
            result.notes.append(f"not executed: {unmade}; the checks read from outputs "
                                "are held for review")
        elif reason:
            result.notes.append(f"graded from the stored outputs: {reason}")
        scene = L2Scene(ctx, run, sol, reason, runs_verdict=lambda crit, check, source:
                        self._runs(ctx, crit, check, source),
                        output_verdict=lambda crit, check: absent_because(
                            ctx, check, run, charged_where_it_failed(
                                ctx, crit, check, run, sol, lambda key, c=crit, k=check:
                                self._output(c, k, run, key, reason))))
        for crit in ctx.assignment.rubric.criteria:
            for check in crit.evaluated:
                kind = check_types.of(check.type)
                if kind.layer == self.name:
                    result.checks.append(kind.evaluate(crit, check, scene))
        if unmade:
            result.checks = [unverified(c, unmade) if check_types.of(c.check).reads_outputs else c
                             for c in result.checks]
        if (unrun := no_outputs_flag(ctx.match, ctx.submission, run)) is not None:
            result.flags.append(unrun)
        if run is not None and run.tampering:  # static findings count even if the run failed
            shown = "; ".join(t.text for t in run.tampering[:3])
            result.flags.append(Flag(
                "executor_tampering",
                f"the notebook changes how errors reach the grader ({shown}); its failing "
                "cells were still counted from the kernel's replies",
                tuple(run.tampering[:10])))
        if run is not None and run.check_tampering:
            shown = "; ".join(t.text for t in run.check_tampering[:3])
            result.flags.append(Flag(
                "check_tampering",
                f"the notebook interferes with how its values and the instructor's tests "
                f"reach the grader ({shown}); every verdict was computed outside the "
                "student's kernel, and a test whose answers could not be trusted earned "
                "nothing", tuple(run.check_tampering[:10])))
        if run is not None and not run.error:
            moved = stale_checks(ctx, run, lambda crit, check, source: self._runs(
                ctx, crit, check, source))
            if (stale := stale_outputs_flag(moved)) is not None:
                result.flags.append(stale)
                result.checks = held(result.checks, moved)
            result.details.update(
                seconds=run.seconds,
                timed_out=run.timed_out,
                sandboxed=run.sandboxed,
                kernel=run.kernel,
            )
            if run.timed_out:
                result.flags.append(
                    Flag("timeout", "execution hit the time limit; later cells did not run")
                )
            flooded = [(c.index, name) for c in run.cells for name in c.flooded]
            if flooded:
                shown = ", ".join(f"cell {i} ({name})" for i, name in flooded[:5])
                result.flags.append(Flag(
                    "output_flood", f"the notebook wrote more output than is kept ({shown}): "
                    "the rest was dropped as it came, and the cell ran on until it ended or "
                    "hit its time limit"))
            if run.oom_kills:
                result.flags.append(Flag(
                    "out_of_memory", f"the run's memory limit (all its processes together) "
                    f"killed {run.oom_kills} of its processes; cells after that did not run"))
        return result

    def _nothing_to_run(self, ctx: SubmissionContext, result: LayerResult) -> LayerResult:
        """No code of the student's own: template code earns nothing, so nothing runs."""
        result.notes.append("not executed: the notebook has no code of the student's own")
        result.details["executed"] = False
        for crit in ctx.assignment.rubric.criteria:
            for check in crit.evaluated:
                kind = check_types.of(check.type)
                if kind.layer != self.name:
                    continue
                if kind.no_code == "evaluate":
                    result.checks.append(_marked(check, self._runs(ctx, crit, check, None)))
                elif kind.no_code == "zero":
                    result.checks.append(_marked(check, _zero(
                        crit, check, f"no code of the student's own computes {check.target}",
                        facts=Facts("no_own_code"))))
                else:
                    result.checks.append(CheckResult(
                        crit.id, check.type, check.target, 0.0, check.weight, "L2",
                        "not run: the notebook has no code of the student's own",
                        hidden=check.hidden, facts=Facts("no_own_code")))
        return result

    @staticmethod
    def _errors(ctx: SubmissionContext, run: ExecutionResult | None) -> tuple[int, int, list]:
        """(errored student cells, student code cells, evidence): fresh run or stored outputs."""
        own = {o.cell.id for o in ctx.match.student_code_cells}  # cells of prose are no code
        if run is not None and not run.error:
            errored = [(c.cell_id, c.error) for c in run.cells if not c.ok]
        else:
            errored = [
                (c.id, next(o.text for o in c.outputs if o.kind == "error"))
                for c in ctx.submission.code_cells
                if c.has_error
            ]
        data_names = {p.name for p in ctx.assignment.assignment.data_files()}
        counted = [
            (cid, err)
            for cid, err in errored
            if cid in own and not environment_error(err or "", data_names)
        ]
        ev = [Evidence(cid, None, _cut(err or "")) for cid, err in counted]
        return len(counted), max(1, len(own)), ev

    def _runs(
        self, ctx: SubmissionContext, crit: Criterion, check: Check, run: ExecutionResult | None
    ) -> CheckResult:
        if not ctx.match.student_code_lines:
            return CheckResult(crit.id, "runs", check.target, 0.0, check.weight, "L2",
                               "no code of the student's own to run",
                               facts=Facts("no_own_code"))
        n_err, n_cells, ev = self._errors(ctx, run)
        fresh = run is not None and not run.error
        source = "fresh run" if fresh else "stored outputs"
        counts = (("errors", n_err), ("cells", n_cells), ("allowed", check.max_errors),
                  ("fresh", int(fresh)))
        if n_err <= check.max_errors:
            return CheckResult(
                crit.id, "runs", check.target, 1.0, check.weight, "L2",
                f"the student's {n_cells} code cells ran with {n_err} errors ({source})",
                tuple(ev), facts=Facts("ran", counts=counts))
        score = max(0.0, 1.0 - n_err / n_cells)
        return CheckResult(
            crit.id, "runs", check.target, score, check.weight, "L2",
            f"{n_err} of the student's {n_cells} code cells raised errors ({source})",
            tuple(ev), facts=Facts("errors", counts=counts))

    @staticmethod
    def _output(
        crit: Criterion,
        check: Check,
        run: ExecutionResult | None,
        sol: ExecutionResult | None,
        reason: str,
    ) -> CheckResult:
        var = check.variable
        if reason or run is None or sol is None:
            return _zero(crit, check, f"not checked: {reason}", "skipped",
                         Facts("not_checked"))
        expected = sol.variables.get(var)
        if expected is None or not expected.exists:
            return _zero(crit, check, f"not charged to the student: the instructor's solution "
                         f"does not define {var} after its own run (see the assignment's "
                         "check)", "environment", Facts("no_key"))
        got = run.variables.get(var)
        if got is None or not got.exists:
            return _zero(crit, check, f"{var} is not defined after running the notebook",
                         facts=Facts("undefined"))
        if got.error:
            return _zero(crit, check, f"{var} could not be inspected: {got.error}", "error",
                         Facts("uninspectable"))
        compared = compare_aspects(
            got,
            expected,
            list(check.compare or ("values",)),
            check.rtol,
            check.atol,
            check.ignore_order,
        )
        aspects = {a: (ok, msg) for a, (ok, msg, _) in compared.items()}
        weights = check.aspect_weights()
        score = sum(weights.get(a, 0.0) for a, (ok, _) in aspects.items() if ok)
        parts = [f"{a}: {'ok' if ok else msg}" for a, (ok, msg) in aspects.items()]
        ev = (Evidence(None, None, f"{var}: type {got.type}, shape {got.shape}"),)
        method = {a: weights.get(a, 0.0) for a in aspects if a not in VALUE_ASPECTS}
        method_score = (sum(w for a, w in method.items() if aspects[a][0]) / sum(method.values())
                        if sum(method.values()) > 0 else None)
        facts = Facts("compared", parts=tuple(part for _, _, part in compared.values()))
        return CheckResult(
            crit.id, "output", var, min(1.0, score), check.weight, "L2", "; ".join(parts), ev,
            method_score=method_score, facts=facts,
        )


def _cut(text: str, limit: int = 200) -> str:
    """An error as evidence keeps: at most ``limit`` characters, a cut one marked "…"
    (the letter drops a cut tail that follows hidden text: ``grader.letters.hidden``)."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _marked(check: Check, result: CheckResult) -> CheckResult:
    """``result`` marked hidden when its rubric check is."""
    return replace(result, hidden=True) if check.hidden else result


def _zero(crit: Criterion, check: Check, message: str,
          status: CheckStatus = "ok", facts: Facts = NO_FACTS) -> CheckResult:
    """An output check that earns nothing, and why ("skipped"/"error": for review)."""
    return CheckResult(crit.id, check.type, check.target, 0.0, check.weight, "L2", message,
                       status=status, facts=facts)

