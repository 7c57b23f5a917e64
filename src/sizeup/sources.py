"""Which models, files and code a caller may name: the one check between a name and the readers.

The CLI and the Python API run with no policy: a user may name any file or `FILE.py:FACTORY` target,
as on their own shell. The web UI's worker processes run under a `SourcePolicy` (`restricted`), and
then every reader that turns a name into something it opens asks this module first:

- `ingest.load.load_model` → `admit_model`: a preset name or Hugging Face id of a preset (looked up in
  sizeup's own data only, never on disk), or a file inside the policy's folders (the UI's uploads);
- `ingest.target` (`load_factory`, `target_source`) → `admit_code`: no Python code, except the models
  sizeup ships (`sizeup.examples.zoo:NAME`);
- `plan.scenario.load_scenario` → `admit_file`: a scenario file inside the policy's folders;
- `ingest.headers.model_from_header` → `upload_prefix_of`: the size of the whole file an upload is the first
  bytes of (a browser sends only the head of a large .gguf file), which the UI's server recorded beside the
  upload (`<file>.prefix-of`); with no policy there is no such record and every file is read as whole.

A refused name is refused from its spelling alone, before any file system call, so the answer never
depends on whether a path exists (no file-existence oracle), and the message quotes no path.

The policy is process-wide on purpose: it must hold in every thread of a UI worker process, and a
worker process exists only to serve the UI (see `ui/worker.py`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sizeup.errors import ConfigError, IngestError, ResolveError

__all__ = ["SourcePolicy", "restricted", "active_policy", "admit_model", "admit_code", "admit_file",
           "upload_prefix_of", "PREFIX_SUFFIX", "BUILTIN_TARGET"]

BUILTIN_TARGET = re.compile(r"sizeup\.examples\.zoo:[a-z][a-z0-9_]{0,63}")
"""The only code a policy admits: a factory of sizeup's own model zoo, by name (no dots, no private names)."""

_FILE_SUFFIXES = (".json", ".safetensors", ".gguf", ".onnx", ".py", ".yaml", ".yml", ".pt", ".pth", ".bin",
                  ".ckpt", ".pkl", ".zip", ".tar")


@dataclass(frozen=True, slots=True, kw_only=True)
class SourcePolicy:
    """Files may be read only inside `roots` (absolute, resolved folders); code may not run at all."""

    roots: tuple[Path, ...]
    who: str = "this UI"
    """Named in refusals: "this UI reads only …"."""

    def __post_init__(self) -> None:
        if not all(isinstance(r, Path) and r.is_absolute() for r in self.roots):
            raise ValueError("SourcePolicy.roots: expected absolute paths")

    def inside(self, path: Path) -> bool:
        """True when `path`, lexically and after resolving links, lies inside one of the roots."""
        text = os.path.normpath(str(path))
        if not os.path.isabs(text) or not any(_under(Path(text), r) for r in self.roots):
            return False  # decided from the spelling: no file system call for a path outside
        real = Path(os.path.realpath(text))
        return any(_under(real, Path(os.path.realpath(r))) for r in self.roots)


_ACTIVE: SourcePolicy | None = None


def active_policy() -> SourcePolicy | None:
    return _ACTIVE


@contextmanager
def restricted(policy: SourcePolicy) -> Iterator[SourcePolicy]:
    """Run the block (in this whole process) under `policy`; the previous policy is restored after."""
    global _ACTIVE
    previous, _ACTIVE = _ACTIVE, policy
    try:
        yield policy
    finally:
        _ACTIVE = previous


def admit_model(name: str) -> str:
    """How `ingest.load.load_model` may treat `name`: "any" (no policy), "file" (a file inside the
    policy's folders: read it), or "name" (a preset only: never look it up on disk). Anything else is
    refused with one line."""
    policy = _ACTIVE
    if policy is None:
        return "any"
    if ":" in name:
        raise _code_refusal("model", name, policy)
    if os.path.isabs(name) and policy.inside(Path(name)):
        return "file"
    if _path_like(name):
        raise ResolveError(f"model: a local path; {policy.who} opens no path it is sent (files are uploaded) and "
                           "runs no user code: expected a preset name or the Hugging Face id of a preset")
    return "name"


def admit_code(target: str) -> None:
    """Refuse a Python target (`FILE.py:FACTORY`, `module:FACTORY`) under a policy, except sizeup's zoo."""
    policy = _ACTIVE
    if policy is not None and not BUILTIN_TARGET.fullmatch(target):
        raise _code_refusal("model", target, policy)


def admit_file(path: str | Path, what: str) -> Path:
    """`path` itself, when no policy is active or the file lies inside the policy's folders."""
    policy = _ACTIVE
    if policy is None or policy.inside(Path(path)):
        return Path(path)
    raise ConfigError(f"{what}: a path outside {policy.who}'s folder; {policy.who} opens no path it is sent (files "
                      "are uploaded)")


PREFIX_SUFFIX = ".prefix-of"
"""The record the UI's server writes beside an upload that is the head of a larger file: the whole size in bytes."""


def upload_prefix_of(path: str | Path) -> int | None:
    """The byte size of the whole file that the upload at `path` is the head of, where the UI's server recorded
    one (only under a policy, only inside its folders); None for a file read as whole."""
    policy = _ACTIVE
    if policy is None or not policy.inside(Path(path)):
        return None
    record = Path(str(path) + PREFIX_SUFFIX)
    try:
        text = record.read_text(encoding="ascii")
    except (OSError, UnicodeError):
        return None  # none recorded: a whole file
    if not text.isdigit() or len(text) > 16:
        raise IngestError(f"{Path(path).name}: the UI's record of the whole file's size is damaged: expected bytes")
    return int(text)


def _code_refusal(what: str, name: str, policy: SourcePolicy) -> IngestError:
    shown = name if len(name) <= 80 else name[:60] + "…"
    return IngestError(f"{what} {shown!r}: names Python code (FILE.py:FACTORY or module:FACTORY); {policy.who} "
                       "runs no user code (sizeup's own models: sizeup.examples.zoo:NAME)")


def _path_like(name: str) -> bool:
    lowered = name.lower()
    return (name.startswith(("/", "~", ".")) or "\\" in name or ".." in name or "\0" in name
            or lowered.endswith(_FILE_SUFFIXES) or os.path.isabs(name))


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
