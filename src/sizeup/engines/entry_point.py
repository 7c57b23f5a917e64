"""An engine's entry point (`EntryPoint`, a base of engines/base.py `ExecutionModel`): its HTTP server (the default),
whose front end adds each request's host time outside the GPU steps and busies one process per request it takes in,
or its in-process run (`--engine-opt offline`, the profile's `offline_frontend`: vLLM's LLM class, SGLang's offline
engine, TensorRT-LLM's trtllm-bench / LLM API), which is offline (every prompt handed over in one call, no arrival
process) unless the engine's in-process entry point takes requests as they come (`IN_PROCESS_ARRIVALS`)."""

from __future__ import annotations

from typing import ClassVar

from sizeup.ranges import Range

__all__ = ["EntryPoint"]


class EntryPoint:
    """The entry-point hooks of an execution model (`self.profile`, `self.label`, `self.load_policy`: base.py)."""

    BATCH_CAP_OPTION: ClassVar[str | None] = None
    """The `--engine-opt` key that caps the sequences its scheduler runs at once (vLLM max-num-seqs)."""
    IN_PROCESS_ARRIVALS: ClassVar[bool] = False
    """Whether the in-process entry point takes requests as they come (`offline` False even in-process)."""

    def request_overhead(self) -> tuple[Range, str] | None:
        """Host time a served request spends outside the GPU steps before its first token reaches the client (the
        API server's HTTP/JSON handling, tokenization, the hand-off to the scheduler's process, detokenizing and
        streaming the first token), with the sentence that says so: the profile's `request_overhead_s` (by
        release where it changed); None where the data gives none (nothing added)."""
        overhead = self.profile.range("request_overhead_s")
        if overhead is None:
            return None
        lag = self.load_policy.first_token_lag_steps
        return overhead, (f"{self.label}: each request's host time outside the GPU steps (API server, tokenization, "
                          f"hand-off to the scheduler, streaming the first token) takes {overhead.typical * 1e3:.3g} ms "
                          f"({overhead.low * 1e3:.3g}-{overhead.high * 1e3:.3g}) of TTFT, one request after another"
                          + (f"; a step's output is processed while the next step runs, so the first token leaves "
                             f"{lag} step{'s' if lag > 1 else ''} after its prefill" if lag else ""))

    @property
    def in_process(self) -> bool:
        """Whether the run drives the engine in-process (`--engine-opt offline`, the profile's `offline_frontend`:
        vLLM's LLM class, SGLang's offline engine, trtllm-bench) rather than through its HTTP server (the default)."""
        return bool(self.profile.value("offline_frontend", 0))

    @property
    def offline(self) -> bool:
        """Whether the run is an offline entry point (every prompt handed over in one call), which has no arrival
        process to load with a request rate or a concurrency: `in_process` unless IN_PROCESS_ARRIVALS."""
        return self.in_process and not self.IN_PROCESS_ARRIVALS

    def load_rule(self) -> str:
        """How `--engine-opt offline` is loaded, for the note that says what the switch meant for this engine."""
        cap = f", --engine-opt {self.BATCH_CAP_OPTION}=N caps its batch" if self.BATCH_CAP_OPTION else ""
        return (f"loaded only with every prompt at once (--concurrency inf, implied by --dataset / --num-prompts{cap}): "
                "no --rps, no --concurrency N" if self.offline else
                "--rps and --concurrency N load it, as they load a server")

    def request_intake(self) -> Range | None:
        """Time the front end's process is busy with one request it takes in (HTTP/JSON, chat template,
        tokenization, the hand-off), the service time of its queue when requests come faster than it takes them:
        the profile's `request_intake_s` where the data separates it from the request's latency, else the whole
        `request_overhead` (None where neither is given)."""
        intake = self.profile.range("request_intake_s")
        if intake is not None and intake.high > 0:
            return intake
        latency = self.request_overhead()
        return latency[0] if latency else None
