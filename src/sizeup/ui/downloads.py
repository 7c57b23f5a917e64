"""The plan sheet as a file, in each format the page offers; runs in a UI worker (ui/worker.py)."""

from __future__ import annotations

from pathlib import Path

from sizeup.ui.bridge import UiError, check_argv, cli_run, error_line, with_flags

__all__ = ["DOWNLOADS", "plan_file"]

DOWNLOADS = {"html": "text/html", "md": "text/markdown", "json": "application/json",
             "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
             "zip": "application/zip"}
"""The sheet's formats, and `zip`: the Kubernetes manifests of `sizeup plan … --deploy DIR`, zipped."""


def plan_file(argv: list[str], fmt: str, folder: Path, root: Path) -> Path:
    """The sheet of the plan `argv` as `fmt`, written under `folder` (inside the UI's folder `root`)."""
    if fmt not in DOWNLOADS:
        raise UiError(f"format {fmt!r}: expected one of {', '.join(DOWNLOADS)}", 404)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"sheet.{fmt}"
    if fmt == "zip":  # the deploy files: `plan --deploy DIR`, one YAML per object, in one archive
        import zipfile

        manifests = folder / "deploy"
        code, _, err = _run(with_flags(argv, "--format=json", f"--deploy={manifests}"), root)
        files = sorted(manifests.glob("*.yaml")) if manifests.is_dir() else []
        if code not in (0, 2) or not files:
            raise UiError(error_line(err, "no configuration meets the scenario: no deploy files"))
        path = folder / "deploy.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for f in files:
                archive.write(f, arcname=f"k8s/{f.name}")
        return path
    if fmt == "json":
        code, out, err = _run(with_flags(argv, "--format=json"), root)
        if code not in (0, 2):
            raise UiError(error_line(err, "plan failed"))
        path.write_text(out)
        return path
    code, _, err = _run(with_flags(argv, f"--format={fmt}", f"--out={path}"), root)
    if code not in (0, 2) or not path.exists():
        raise UiError(error_line(err, "plan failed"))
    return path


def _run(argv: list[str], root: Path) -> tuple[int, str, str]:
    check_argv(argv, root)
    return cli_run(argv)
