"""The compute requirement sheet as a what-if .xlsx workbook (openpyxl, an optional extra).

Three worksheets:
- "Inputs": what a user may change — traffic (users and requests per user per hour, or requests per
  day and the peak-hour share, or the peak rate itself), peak factor, prompt/output lengths, the
  per-replica capacity the plan measured at the SLA, headroom, prices, hours per month, the budget.
- "Plan": live formulas over the inputs — peak and mean req/s, replicas (ROUNDUP of peak ÷ usable
  per-replica capacity, plus the plan's spare replica), instances, monthly costs on every basis, the
  budget share and check, cost per million tokens, memory in GiB, the simulated latencies in ms.
- "sheet": the rest of the sheet (choice, runners-up, rejections, fault plan) as values; its key
  figures refer to the Plan cells instead of repeating their numbers.
Every input and result has an Excel defined name (`users`, `peak_requests_per_s`, `price_per_hour`,
`monthly_budget`, `monthly_cost`, …), so a formula reads `=instances*price_per_hour*hours_per_month`.
The per-replica capacity is the plan's simulation at the planned lengths: editing the lengths changes
the cost per token, not that capacity (the note says so). Excel and LibreOffice recalculate on opening.

Formulas are only those this module builds (a Row's value, a `Formula` link); every other string (labels,
notes, device and offer names, the scenario's name) goes through `_put`: control characters shown escaped,
stored as text, with Excel's quote prefix when it begins like a formula (`sizeup.escape.spreadsheet_text`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sizeup.errors import ConfigError
from sizeup.escape import spreadsheet_text, terminal
from sizeup.plan.sheet import Sheet
from sizeup.plan.sheet_load import sla_load

__all__ = ["write_xlsx", "workbook_rows"]

INPUTS_TITLE = "Inputs"
PLAN_TITLE = "Plan"
SHEET_TITLE = "sheet"
_GIB = 2**30
_FORMATS = {"USD": '"$"#,##0.00', "USD/h": '"$"#,##0.0000', "%": "0.0%", "GiB": "0.00", "ms": "0.0",
            "req/s": "0.0000"}
# sheet cell key -> the Plan name that computes it (the sheet worksheet then refers to it)
_SHEET_LINKS = {"replicas_for_load": "replicas_for_load", "replicas": "replicas", "replicas_at_base": "replicas_at_base",
                "instances": "instances", "monthly_on_demand": "monthly_on_demand", "monthly_spot": "monthly_spot",
                "monthly_reserved": "monthly_reserved", "monthly_mixed": "monthly_mixed",
                "monthly_owned": "monthly_cost", "instance_hours": "instance_hours", "floor_instances": "floor_instances",
                "usd_per_million_tokens": "usd_per_million_tokens_on_demand", "scale_out_at": "scale_out_at",
                "job_on_demand": "job_cost"}


class Formula(str):
    """A formula this module built (over defined names or cell references): the only strings written as one."""


@dataclass(frozen=True, slots=True)
class Row:
    """One named row: `value` is a number, or a formula over other names when it starts with "=" (values are
    built in this module from numbers, never from user text; labels and notes may hold user text)."""

    name: str
    label: str
    value: Any
    unit: str = ""
    note: str = ""


def _traffic_inputs(traffic, plan) -> tuple[list[Row], list[Row]]:
    """Inputs and Plan rows for the request rates."""
    inputs: list[Row] = []
    if traffic.users is not None:
        inputs += [Row("users", "users (all active in the busiest hour)", traffic.users),
                   Row("requests_per_user_per_hour", "requests per user per hour", traffic.requests_per_user_per_hour,
                       "req/h")]
        peak = "=users*requests_per_user_per_hour/3600*peak_factor"
        base = "=users*requests_per_user_per_hour/3600*0.25"
        base_note = "a quarter of the peak hour's rate before the event factor (the scenario reader's rule)"
    elif traffic.requests_per_day is not None:
        inputs += [Row("requests_per_day", "requests per day", traffic.requests_per_day),
                   Row("peak_hour_share", "share of the day's requests in the busiest hour", traffic.peak_hour_share,
                       "%")]
        peak = "=requests_per_day*peak_hour_share/3600*peak_factor"
        base = "=requests_per_day/86400"
        base_note = "the day's requests spread evenly"
    else:
        inputs.append(Row("peak_requests_per_s", "peak requests per second (event factor included)",
                          plan.peak_requests_per_s, "req/s", "the scenario gives the rate"))
        peak = None
        base = "=peak_requests_per_s/peak_factor/3"
        base_note = "a third of the peak before the event factor (the scenario reader's rule)"
    inputs += [Row("peak_factor", "peak factor (events)", traffic.peak_factor),
               Row("prompt_tokens", "prompt tokens per request (mean)", traffic.prompt_tokens),
               Row("output_tokens", "output tokens per request (mean)", traffic.output_tokens)]
    rows = [] if peak is None else [Row("peak_requests_per_s", "peak requests per second", peak, "req/s")]
    rows.append(Row("base_requests_per_s", "mean requests per second", base, "req/s", base_note))
    return inputs, rows


def _basis_price(candidate) -> tuple[float, str, str]:
    """(hourly price per instance, basis label, Plan row of the monthly cost) on the plan's pricing basis."""
    offer, basis = candidate.offer, candidate.pricing_basis
    if candidate.owned or offer is None or candidate.monthly is None:
        from sizeup.plan.cost import HOURS_PER_MONTH

        owned = candidate.detail.get("owned_monthly_usd") or candidate.cost_usd
        return owned / candidate.replicas.with_redundancy / HOURS_PER_MONTH, "owned (amortised purchase + power)", ""
    table = {"reserved-1y": (offer.reserved_1y_usd_per_hour, "1-year reserved", "monthly_reserved"),
             "spot": (offer.spot_usd_per_hour, "spot", "monthly_spot"),
             "mixed": (offer.reserved_1y_usd_per_hour, "mixed (the floor reserved)", "monthly_mixed")}
    price, label, row = table.get(basis, (offer.on_demand_usd_per_hour, "on-demand", "monthly_on_demand"))
    return price, label, row


def _serving(result) -> tuple[list[Row], list[Row]]:
    from sizeup.plan.cost import HOURS_PER_MONTH

    scenario, chosen = result.scenario, result.chosen or result.closest
    plan, offer = chosen.replicas, chosen.offer
    inputs, rows = _traffic_inputs(scenario.traffic, plan)
    price, basis, cost_row = _basis_price(chosen)
    fleet = chosen.detail.get("fleet")
    cloud = not chosen.owned and offer is not None and chosen.monthly is not None and fleet is not None
    inputs += [Row("rate_per_replica", "requests per second one replica serves at the SLA", plan.rate_per_replica,
                   "req/s", "simulated at the planned lengths; re-plan if the lengths change much"),
               Row("headroom", "capacity kept free at the peak", plan.headroom, "%"),
               Row("spare_replicas", "spare replicas (N+1)", plan.with_redundancy - plan.for_load),
               Row("gpus_per_replica", "GPUs per replica", chosen.gpus)]
    if cloud:
        inputs += [Row("replicas_per_instance", f"replicas per {offer.instance}", fleet["per_instance"],
                       "", "a replica lives inside one instance"),
                   Row("on_demand_price_per_hour", f"{offer.instance} on-demand price", offer.on_demand_usd_per_hour,
                       "USD/h", f"{offer.provider} {offer.region}, price of {offer.price_date}")]
        if offer.spot_usd_per_hour is not None:
            inputs.append(Row("spot_price_per_hour", f"{offer.instance} spot price", offer.spot_usd_per_hour, "USD/h"))
        if offer.reserved_1y_usd_per_hour is not None:
            inputs.append(Row("reserved_price_per_hour", f"{offer.instance} 1-year reserved price",
                              offer.reserved_1y_usd_per_hour, "USD/h"))
        peak = plan.peak_requests_per_s
        for i, lv in enumerate(fleet["levels"]):
            inputs += [Row(f"level_{i}_hours", f"hours a month at '{lv['label']}'", lv["hours"], "h", fleet["method"]
                           if i == 0 else ""),
                       Row(f"level_{i}_share", f"'{lv['label']}': rate as a share of the peak",
                           lv["requests_per_s"] / peak if peak else 0.0, "%")]
    inputs += [Row("price_per_hour", f"price per instance-hour, {basis} (the plan's basis)", price, "USD/h",
                   "per replica for owned cards" if not cloud else "the cheapest basis the scenario allows"),
               Row("hours_per_month", "hours per month", HOURS_PER_MONTH, "h", "365 × 24 / 12"),
               Row("monthly_budget", "monthly budget (0 = none)", scenario.budget.monthly_usd or 0, "USD")]
    usable = "(rate_per_replica*(1-headroom))"
    rows += [Row("replicas_for_load", "replicas for the peak load", f"=MAX(1,ROUNDUP(peak_requests_per_s/{usable},0))"),
             Row("replicas", "replicas with the spare", "=replicas_for_load+spare_replicas"),
             Row("replicas_at_base", "replicas at the mean load", f"=MAX(1,ROUNDUP(base_requests_per_s/{usable},0))"),
             Row("gpus_total", "GPUs in all", "=replicas*gpus_per_replica"),
             Row("instances", "instances at the peak" if cloud else "cards (replicas)",
                 "=ROUNDUP(replicas/replicas_per_instance,0)" if cloud else "=replicas")]
    if cloud:
        levels = range(len(fleet["levels"]))
        for i in levels:
            rows.append(Row(f"level_{i}_instances", f"instances at '{fleet['levels'][i]['label']}'",
                            f"=ROUNDUP((MAX(1,ROUNDUP(peak_requests_per_s*level_{i}_share/{usable},0))+spare_replicas)"
                            f"/replicas_per_instance,0)"))
        rows += [Row("instance_hours", "instance-hours billed a month (autoscaled)",
                     "=" + "+".join(f"level_{i}_hours*level_{i}_instances" for i in levels), "h"),
                 Row("floor_instances", "instances at the autoscaling floor",
                     "=MIN(" + ",".join(f"level_{i}_instances" for i in levels) + ")"),
                 Row("monthly_on_demand", "monthly cost, on-demand (autoscaled)",
                     "=instance_hours*on_demand_price_per_hour", "USD")]
        if offer.spot_usd_per_hour is not None:
            rows.append(Row("monthly_spot", "monthly cost, spot (autoscaled)", "=instance_hours*spot_price_per_hour",
                            "USD", "spot capacity can be reclaimed: keep the spare replica on-demand"))
        if offer.reserved_1y_usd_per_hour is not None:
            burst = "spot_price_per_hour" if fleet["burst_basis"] == "spot" else "on_demand_price_per_hour"
            rows += [Row("monthly_reserved", "monthly cost, 1-year reserved (the peak fleet all month)",
                         "=instances*reserved_price_per_hour*hours_per_month", "USD"),
                     Row("monthly_mixed", f"monthly cost, mixed: the floor reserved, the rest {fleet['burst_basis']}",
                         f"=floor_instances*reserved_price_per_hour*hours_per_month+(instance_hours-floor_instances*"
                         f"hours_per_month)*{burst}", "USD")]
        rows.append(Row("monthly_cost", f"monthly cost ({basis})", f"={cost_row}", "USD"))
    elif chosen.detail.get("owned_replicas") is not None and "instance-hours" in (chosen.detail.get("owned_mix") or ""):
        rows.append(Row("monthly_cost", f"monthly cost ({basis}, owned cards and rented burst)", chosen.cost_usd,
                        "USD", chosen.detail.get("owned_mix") or ""))
    else:
        rows.append(Row("monthly_cost", f"monthly cost ({basis})", "=instances*price_per_hour*hours_per_month", "USD"))
    rows += [Row("budget_share", "share of the budget", "=IF(monthly_budget>0,monthly_cost/monthly_budget,0)", "%"),
             Row("budget_check", "budget check",
                 '=IF(monthly_budget>0,IF(monthly_cost<=monthly_budget,"within budget","OVER BUDGET"),"no budget set")'),
             Row("scale_out_at", "scale out when requests per replica exceed", f"={usable}", "req/s")]
    if scenario.task != "vision":
        tokens = "(base_requests_per_s*output_tokens*3600*hours_per_month)"
        rows.append(Row("usd_per_million_tokens", f"cost per million output tokens ({basis}, mean load)",
                        f"=monthly_cost/{tokens}*1000000", "USD"))
        if cloud:
            rows.append(Row("usd_per_million_tokens_on_demand", "cost per million output tokens (on-demand, mean load)",
                            f"=monthly_on_demand/{tokens}*1000000", "USD"))
    return inputs, rows


def _job(result) -> tuple[list[Row], list[Row]]:
    chosen, scenario = result.chosen or result.closest, result.scenario
    offer = chosen.offer
    per_instance = offer.gpu_count
    inputs = [Row("job_hours", "run time", chosen.latency["hours"], "h", "the plan's estimate at the chosen setup"),
              Row("instances", "instances", chosen.detail.get("instances") or -(-chosen.gpus // per_instance)),
              Row("price_per_hour", f"{offer.instance} on-demand price", offer.on_demand_usd_per_hour, "USD/h",
                  f"{offer.provider} {offer.region}, price of {offer.price_date}"),
              Row("job_budget", "job budget (0 = none)", scenario.budget.job_usd or 0, "USD")]
    rows = [Row("job_cost", "job cost, on-demand", "=job_hours*instances*price_per_hour", "USD",
                "the instances are billed whole for the run (a batch job runs a replica on each group of GPUs)"),
            Row("budget_check", "budget check",
                '=IF(job_budget>0,IF(job_cost<=job_budget,"within budget","OVER BUDGET"),"no budget set")')]
    return inputs, rows


def _results(result) -> list[Row]:
    """Memory in GiB (a formula over the bytes) and latencies in ms: the plan's figures, not recomputed."""
    chosen = result.chosen or result.closest
    rows: list[Row] = []
    if chosen is None:
        return rows
    if chosen.memory_bytes:
        rows += [Row("memory_needed_bytes", "memory needed per GPU", chosen.memory_bytes, "bytes"),
                 Row("memory_needed_gib", "memory needed per GPU", f"=memory_needed_bytes/{_GIB}", "GiB"),
                 Row("memory_usable_bytes", "memory usable per GPU", int(chosen.usable_bytes), "bytes"),
                 Row("memory_usable_gib", "memory usable per GPU", f"=memory_usable_bytes/{_GIB}", "GiB"),
                 Row("oom_margin_gib", "OOM margin per GPU", "=memory_usable_gib-memory_needed_gib", "GiB")]
    sim, load = chosen.simulation, sla_load(result.scenario, chosen)
    if sim is not None:
        for metric in ("ttft", "tpot", "e2e"):
            for point in ("p50", "p95", "p99", "p999"):
                value = sim.metric(f"{metric}_{point}")
                if value == value and not (result.scenario.task == "vision" and metric != "e2e"):
                    first = not any(r.name.endswith("_ms") and r.name[:4] in ("ttft", "tpot", "e2e_") for r in rows)
                    rows.append(Row(f"{metric}_{point}_ms", f"{metric.upper()} {point} {load.phrase}",
                                    value * 1e3, "ms", (f"simulated {load.phrase}: {load.detail}; " if first else
                                                        "simulated; ") + "not recomputed when inputs change"))
    else:
        for k, v in chosen.latency.items():
            if k == "hours":
                continue
            rows.append(Row(f"{k}_ms", k.upper() + (f", {load.phrase}" if load else ""), v * 1e3, "ms",
                            "the plan's estimate" + (f": {load.detail}" if load else "")))
    for k, v in result.scenario.sla.targets.items():
        rows.append(Row(f"target_{k}_ms", f"SLA target {k}", v * 1e3, "ms"))
    return rows


def workbook_rows(result) -> tuple[list[Row], list[Row]]:
    """The Inputs and Plan rows of the what-if workbook for a `PlanResult`."""
    chosen = result.chosen or result.closest
    inputs: list[Row] = []
    rows: list[Row] = []
    if chosen is not None and chosen.replicas is not None and result.scenario.traffic is not None:
        inputs, rows = _serving(result)
    elif chosen is not None and "hours" in chosen.latency and chosen.offer is not None:
        inputs, rows = _job(result)
    return inputs, rows + _results(result)


def _write(ws, rows: list[Row], refs: dict[str, str], fonts) -> None:
    from openpyxl.utils import get_column_letter

    bold, note_font = fonts
    for col, head in enumerate(("name", "item", "value", "unit", "note"), start=1):
        _put(ws, 1, col, head).font = bold
    for n, row in enumerate(rows, start=2):
        _put(ws, n, 1, row.name)
        _put(ws, n, 2, row.label)
        target = _put(ws, n, 3, Formula(_formula(row.value, refs)) if _is_formula(row.value) else row.value)
        fmt = _FORMATS.get(row.unit)
        if fmt:
            target.number_format = fmt
        if row.unit:
            _put(ws, n, 4, row.unit)
        if row.note:
            _put(ws, n, 5, row.note).font = note_font
    for col, width in ((1, 26), (2, 50), (3, 16), (4, 8), (5, 70)):
        ws.column_dimensions[get_column_letter(col)].width = width


def _put(ws, row: int, column: int, value: Any):
    """Write one cell: a `Formula` as a formula; any other string as text (control characters shown
    escaped, never evaluated: a leading '=', '+', '-', '@', tab or CR gets Excel's quote prefix); numbers as
    they are. Returns the cell."""
    cell = ws.cell(row=row, column=column)
    if isinstance(value, Formula) or not isinstance(value, str):
        cell.value = str(value) if isinstance(value, Formula) else value
        return cell
    text = terminal(value)
    cell.value = text
    cell.data_type = "s"  # openpyxl reads a leading '=' as a formula; this is text
    if spreadsheet_text(text):
        cell.quotePrefix = True
    return cell


def _is_formula(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("=")


def _formula(text: str, refs: dict[str, str]) -> str:
    """Names in `text` swapped for absolute cell references (the defined names stay for the reader)."""
    import re

    def swap(m: re.Match[str]) -> str:
        return refs.get(m.group(0), m.group(0))

    out = []
    for part in re.split(r'("[^"]*")', text):  # leave string literals alone
        out.append(part if part.startswith('"') else re.sub(r"\b[a-z][a-z0-9_]*\b", swap, part))
    return "".join(out)


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, (int, float, str, bool)) else str(value)


def _sheet_rows(sheet: Sheet, refs: dict[str, str]) -> list[tuple[str, tuple[Any, ...]]]:
    """(kind, values) of the "sheet" worksheet: values, with key figures referring to the Plan."""
    out = [("title", (sheet.title,))]
    headline = getattr(sheet, "headline", None)
    if headline is not None:  # what a manager reads first; its cost live over the Inputs when the plan has them
        out.append(("headline", (headline.text,)))
        for key, label in (("monthly_cost", "monthly cost on the plan's pricing basis"), ("job_cost", "job cost")):
            if key in refs:
                out.append(("cell", (label, Formula("=" + refs[key]), "USD", "live: follows the Inputs sheet")))
    out += [("note", (sheet.verdict,)), ("row", ())]
    for section in sheet.sections:
        out.append(("title", (section.title,)))
        for c in section.cells:
            linked = _SHEET_LINKS.get(c.key)
            if linked in refs:
                out.append(("cell", (c.label, Formula("=" + refs[linked]), c.unit, "")))
            else:
                out.append(("cell", (c.label, _plain(c.value), c.unit, c.note)))
        if section.table_rows:
            out.append(("header", tuple(section.table_headers)))
            out += [("row", tuple(_plain(v) for v in r)) for r in section.table_rows]
        out += [("note", (n,)) for n in section.notes]
        out.append(("row", ()))
    if sheet.assumptions:
        out.append(("title", ("Assumptions",)))
        out += [("note", (a,)) for a in sheet.assumptions]
    return out


def write_xlsx(sheet: Sheet, path: str, result=None) -> None:
    """Write the what-if workbook of `result` (a PlanResult) and the sheet to `path`.

    Without `result` only the "sheet" worksheet is written (as values). Raises ConfigError when
    openpyxl is not installed or the file cannot be written.
    """
    try:
        from openpyxl import Workbook
        from openpyxl.styles import Font
        from openpyxl.workbook.defined_name import DefinedName
    except ImportError as e:
        raise ConfigError("writing .xlsx needs openpyxl: pip install 'sizeup[xlsx]'") from e

    inputs, rows = workbook_rows(result) if result is not None else ([], [])
    refs: dict[str, str] = {}
    for title, table in ((INPUTS_TITLE, inputs), (PLAN_TITLE, rows)):
        for n, row in enumerate(table, start=2):
            if row.name in refs:
                raise ValueError(f"duplicate workbook name {row.name!r}")
            refs[row.name] = f"{title}!$C${n}"
    wb = Workbook()
    ws_in = wb.active
    ws_in.title = INPUTS_TITLE
    ws_plan = wb.create_sheet(PLAN_TITLE)
    ws_sheet = wb.create_sheet(SHEET_TITLE)
    fonts = (Font(bold=True), Font(italic=True, color="555555"))
    _write(ws_in, inputs, refs, fonts)
    _write(ws_plan, rows, refs, fonts)
    for name, ref in refs.items():
        dn = DefinedName(name, attr_text=ref)
        if hasattr(wb.defined_names, "add"):
            wb.defined_names.add(dn)
        else:
            wb.defined_names[name] = dn
    title_font = Font(bold=True, size=13)
    for n, (kind, values) in enumerate(_sheet_rows(sheet, refs), start=1):
        for col, value in enumerate(values, start=1):
            if value is None or value == "":
                continue
            target = _put(ws_sheet, n, col, value)
            if kind in ("header", "headline") or (kind == "title" and col == 1):
                target.font = title_font if kind == "title" else fonts[0]
            elif kind == "note":
                target.font = fonts[1]
    ws_sheet.column_dimensions["A"].width = 50
    ws_sheet.column_dimensions["B"].width = 24
    ws_in.freeze_panes = "A2"
    import io

    buffer = io.BytesIO()  # built in memory, then written: a failed write leaves no half-closed zip behind
    wb.save(buffer)
    from sizeup.files import write_file

    write_file(path, buffer.getvalue(), what="--out", error=ConfigError)
