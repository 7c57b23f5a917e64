"""Charts to files: each chart as SVG, and as PNG where a converter is installed (cairosvg, an
optional extra; matplotlib cannot rasterise SVG, so without cairosvg the charts are SVG only and the
caller says so)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sizeup.errors import ConfigError
from sizeup.report.charts.svg import Chart

__all__ = ["png_converter", "write_chart", "write_charts", "NO_PNG"]

NO_PNG = "PNG not written: no SVG converter installed (pip install cairosvg); SVG only"


def png_converter():
    """cairosvg's `svg2png`, or None when it (or the cairo library under it) is missing."""
    try:
        from cairosvg import svg2png
    except (ImportError, OSError):
        return None
    return svg2png


def _write(path: Path, data: str | bytes, flag: str) -> None:
    from sizeup.files import write_file

    write_file(path, data, what=flag, error=ConfigError)


def write_chart(chart: Chart, path: str | Path, flag: str = "--plot") -> tuple[list[str], str | None]:
    """Write one chart to `path`: FILE.svg as SVG; FILE.png as PNG (plus FILE.svg beside it) when a
    converter is installed, else FILE.svg only. Returns the paths written and a note when the PNG
    could not be made."""
    path = Path(path)
    svg_path = path.with_suffix(".svg")
    _write(svg_path, chart.svg, flag)
    written = [str(svg_path)]
    if path.suffix.lower() != ".png":
        return written, None
    convert = png_converter()
    if convert is None:
        return written, NO_PNG
    _write(path, convert(bytestring=chart.svg.encode("utf-8"), output_width=1520), flag)
    return [str(path), *written], None


def write_charts(charts: Sequence[Chart], folder: str | Path, flag: str = "--plots") -> tuple[dict[str, str], str | None]:
    """Each chart into `folder` as KEY.svg and, with a converter, KEY.png. Returns chart key -> the
    preferred file (PNG where written, else SVG) and the note when PNGs could not be made."""
    out = Path(folder)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"{flag} {str(folder)!r}: cannot create the folder ({e.strerror})") from e
    paths, note = {}, None
    for chart in charts:
        written, note = write_chart(chart, out / f"{chart.key}.png", flag)
        paths[chart.key] = written[0]
    return paths, note
