"""The plan sheet as a file, in each format the page offers; written by a UI worker (ui/jobs.py) under the UI's
own folder, from the plan's typed result (the same renderers as `sizeup plan --format …` and `--deploy`)."""

from __future__ import annotations

from pathlib import Path

from sizeup.ui.bridge import UiError

__all__ = ["DOWNLOADS", "write_sheet"]

DOWNLOADS = {"html": "text/html", "md": "text/markdown", "json": "application/json",
             "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
             "zip": "application/zip"}
"""The sheet's formats, and `zip`: the Kubernetes manifests of `sizeup plan … --deploy DIR`, zipped."""


def write_sheet(report, fmt: str, folder: Path) -> Path:
    """The sheet of `report` (`sizeup.api.PlanReport`) as `fmt`, written under `folder`."""
    if fmt not in DOWNLOADS:
        raise UiError(f"format {fmt!r}: expected one of {', '.join(DOWNLOADS)}", 404)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"sheet.{fmt}"
    if fmt == "zip":  # the deploy files: `plan --deploy DIR`, one YAML per object, in one archive
        import zipfile

        from sizeup.report.deploy import write_deploy

        if not report.result.meets:
            raise UiError("no configuration meets the scenario: no deploy files")
        files = sorted(write_deploy(report.result, str(folder / "deploy")))
        path = folder / "deploy.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for f in files:
                archive.write(f, arcname=f"k8s/{Path(f).name}")
    elif fmt == "json":
        from sizeup.cli.main import json_text

        path.write_text(json_text(report.to_dict()))
    elif fmt == "xlsx":
        from sizeup.report.xlsx import write_xlsx

        write_xlsx(report.sheet, str(path), result=report.result)
    elif fmt == "md":
        from sizeup.report.markdown import render_markdown

        path.write_text(render_markdown(report.sheet))
    else:
        from sizeup.report.charts import plan_charts
        from sizeup.report.html import render_html

        path.write_text(render_html(report.sheet, charts=plan_charts(report.result)))
    return path
