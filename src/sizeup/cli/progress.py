"""Progress on stderr for the commands that take a while (measure, load, calibrate, long traces).

On a terminal: a rich progress bar with the elapsed time and an ETA — over a known number of steps,
or over a time budget (a sweep that stops at its budget, a load test of a fixed duration), refreshed
by rich's own thread so the clock moves between steps. Off a terminal (pipes, CI, `--json`): nothing,
or one plain line per step when `plain=True`. rich is imported only here, only when a bar is shown.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from sizeup.cli.output import raw_stream
from sizeup.escape import terminal_line


class Progress:
    """`with Progress("measuring", budget_s=120) as bar: … bar.step("batch 8")`.

    `total`: steps, when their number is known (the bar advances one per `step`); `budget_s`: a time
    budget instead (the bar fills with elapsed time, the ETA is the budget left). `enabled=None` shows
    the bar only when `stream` is a terminal; `plain` prints "description text…" lines instead when it
    is not (the commands' behaviour before bars)."""

    def __init__(self, description: str, *, total: int | None = None, budget_s: float | None = None,
                 enabled: bool | None = None, plain: bool = False, stream: TextIO | None = None):
        self.description = terminal_line(description)
        self.total = total
        self.budget_s = budget_s
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self.plain = plain and not self.enabled
        self.steps = 0
        self._bar = None
        self._task = None
        self._start = 0.0

    def __enter__(self) -> Progress:
        self._start = time.perf_counter()
        if self.enabled:
            self._open()
        return self

    def _open(self) -> None:
        try:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
        except ImportError:  # rich is a dependency; a broken install still gets plain lines
            self.enabled, self.plain = False, True
            return
        columns = [TextColumn("{task.description}"), BarColumn(),
                   MofNCompleteColumn() if self.total is not None else TextColumn("{task.fields[note]}"),
                   TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
        console = Console(file=raw_stream(self.stream), force_terminal=True)  # the bar's own control sequences pass
        self._bar = RichProgress(*columns, console=console, transient=True,
                                 refresh_per_second=4)
        total = self.total if self.total is not None else self.budget_s
        self._task = self._bar.add_task(self.description, total=total, note="")
        self._bar.start()
        if self.total is None and self.budget_s is not None:
            self._bar.update(self._task, completed=0.0)
            self._start_clock()

    def _start_clock(self) -> None:
        """A time-budget bar fills with elapsed time between steps too."""
        import threading

        def tick() -> None:
            while self._bar is not None:
                self._bar.update(self._task, completed=min(self.elapsed_s, self.budget_s))
                time.sleep(0.25)

        threading.Thread(target=tick, daemon=True).start()

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self._start

    def step(self, text: str = "") -> None:
        """One step done (or begun): `text` names it ("batch 8")."""
        self.steps += 1
        text = terminal_line(text)
        if self._bar is not None:
            if self.total is not None:
                self._bar.update(self._task, advance=1, description=f"{self.description} {text}".strip())
            else:
                self._bar.update(self._task, note=text)
        elif self.plain:
            print(f"{self.description} {text}…".replace(" …", "…"), file=self.stream, flush=True)

    def note(self, text: str) -> None:
        """Change the text beside the bar without counting a step (a load test's request count)."""
        if self._bar is not None:
            self._bar.update(self._task, note=terminal_line(text))

    def __exit__(self, *exc) -> None:
        bar, self._bar = self._bar, None
        if bar is not None:
            bar.stop()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return raw_stream(stream).isatty()
    except (AttributeError, ValueError):
        return False
