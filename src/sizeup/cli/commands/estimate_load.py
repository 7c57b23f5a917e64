"""`sizeup estimate ... --concurrency N|inf | --rps R`: the load flag's value and how throughput under load prints
(the figures: workload/serving.py through sizeup.api.estimate)."""

from __future__ import annotations

from sizeup.units import format_seconds


def parse_concurrency(text: str | None) -> tuple[int | None, bool]:
    """--concurrency: (N, False), 'inf' -> (None, True) (every request queued at once), absent -> (None, False)."""
    from sizeup.errors import ConfigError

    if text is None:
        return None, False
    if str(text).strip().lower() in ("inf", "infinite", "max"):
        return None, True
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 10_000_000:
        raise ConfigError(f"--concurrency {text!r}: expected a positive integer or 'inf'")
    return value, False


def render_load(s) -> str:
    from sizeup.report.terminal import render_table

    def r(x, fmt):
        return f"{fmt(x.typical)} ({fmt(x.low)} - {fmt(x.high)})"

    num = "{:,.0f}".format
    rows = [["output tokens/s", r(s.output_tokens_per_s, num)],
            ["total tokens/s (input + output)", r(s.total_tokens_per_s, num)],
            ["requests/s", r(s.requests_per_s, "{:,.3g}".format)],
            ["decode steps alone (batch / TPOT)", r(s.decode_only_tokens_per_s, num)],
            ["TTFT", r(s.ttft_s, format_seconds)], ["TPOT", r(s.tpot_s, format_seconds)],
            ["end-to-end latency", r(s.e2e_latency_s, format_seconds)],
            ["requests running", f"{s.running.typical:,.0f} of at most {s.capacity:,}"]]
    head = (f"under load: {s.load.label}; {s.mix.input_tokens:,} in / {s.mix.output_tokens:,} out tokens; "
            f"{s.policy}" + ("; SATURATED" if s.saturated else "")
            + (f"; utilization {s.utilization:.0%}" if s.utilization is not None and not s.saturated else ""))
    notes = "\n".join(f"assumption: {note}" for note in s.assumptions)
    return head + "\n" + render_table(["throughput under load", ""], rows, right=[False, True]) + "\n" + notes
