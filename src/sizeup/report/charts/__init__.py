"""Charts as self-contained SVG: one module serves the sheet's HTML, `plan --plots`, `roofline --plot`
and the web UI.

    from sizeup.report.charts import plan_charts, memory_stack_svg
    for chart in plan_charts(result):      # Chart(key, title, svg)
        ...

`svg.py` draws each kind from plain numbers; `plan.py` reads a plan result; `files.py` writes SVG (and
PNG where a converter is installed)."""

from sizeup.report.charts.plan import plan_charts, roofline_data
from sizeup.report.charts.svg import (Chart, Point, bars_svg, latency_axis, line_svg, memory_stack_svg,
                                      roofline_svg, scatter_svg)

__all__ = ["Chart", "Point", "plan_charts", "roofline_data", "scatter_svg", "line_svg", "memory_stack_svg",
           "roofline_svg", "bars_svg", "latency_axis"]
