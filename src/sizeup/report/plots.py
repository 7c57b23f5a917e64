"""Chart files for `plan --plots DIR` and `roofline --plot FILE`, drawn by report/charts (SVG, and PNG
where cairosvg is installed)."""

from __future__ import annotations

from sizeup.report.charts import Chart, plan_charts, roofline_data, roofline_svg
from sizeup.report.charts.files import write_chart, write_charts

__all__ = ["plot_plan", "plot_roofline", "roofline_chart"]


def roofline_chart(priced) -> Chart:
    """The roofline of a priced ledger (`price.roofline.price`): ceilings of the device and its ops."""
    ops, bandwidth, peaks = roofline_data(priced)
    title = f"{priced.arrays.ledger.name} on {priced.device.name}"
    return Chart("roofline", title, roofline_svg(ops, bandwidth, peaks, title))


def plot_roofline(priced, path: str) -> tuple[list[str], str | None]:
    """Write the roofline chart to `path` (FILE.png: PNG and SVG, or SVG only without a converter).
    Returns the paths written and a note when no PNG could be made."""
    return write_chart(roofline_chart(priced), path, "--plot")


def plot_plan(result, folder: str) -> tuple[dict[str, str], str | None]:
    """Every chart of the plan into `folder`. Returns chart key -> file, and a note when only SVG
    could be written."""
    return write_charts(plan_charts(result), folder, "--plots")
