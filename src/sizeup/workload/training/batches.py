"""Dataset-shaped inputs: `--seq` is the longest sequence a batch may hold (the truncation length); `--mean-seq` the
mean sample length; samples are padded to the longest in their micro-batch (the default of transformers'
DataCollatorWithPadding / DataCollatorForSeq2Seq and TRL's SFTTrainer) or packed into rows of `--seq` tokens
(`--packing`). Memory is priced at the longest batch (`--seq`: one batch that reaches it sets the peak); time at
the length the step really processes on average.

With padding, the expected longest of b samples is not knowable from the mean alone: sizeup takes the sample
lengths as spread evenly from 1 to twice the mean (capped at `--seq`), whose expected maximum over b samples is
1 + (2·mean − 1)·b / (b + 1); `--padded-seq` states the measured padded length instead (e.g. num_input_tokens_seen /
sequences, as TRL and HF Trainer log it). Packing fills every row: the step processes `--seq` tokens per row, all
of them real, and attention still runs over the whole row (no per-sample masking is priced)."""

from __future__ import annotations

from dataclasses import dataclass

from sizeup.errors import ConfigError

__all__ = ["Lengths", "sequence_lengths"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Lengths:
    longest: int
    """Positions of the longest micro-batch row: memory is priced here."""
    processed: float
    """Mean positions per row the step computes (padding included): time is priced here."""
    real: float
    """Mean real tokens per row: tokens/s and MFU count these."""
    note: str = ""


def sequence_lengths(seq: int, micro_batch: int, *, mean_seq: float | None, packing: bool,
                     padded_seq: float | None) -> Lengths:
    """The lengths a step of `micro_batch` rows really has (see the module docstring)."""
    for flag, value in (("--mean-seq", mean_seq), ("--padded-seq", padded_seq)):
        if value is not None and not 1 <= value <= seq:
            raise ConfigError(f"{flag} {value:g}: expected a length from 1 to --seq {seq:,}")
    if packing:
        if padded_seq is not None:
            raise ConfigError("--padded-seq describes padded batches: it does not combine with --packing")
        note = f"packing: rows of {seq:,} tokens, every position a real token (memory and time at {seq:,})"
        if mean_seq is not None:
            note += f"; about {seq / mean_seq:.1f} samples of {mean_seq:,.0f} tokens per row, attention over the row"
        return Lengths(longest=seq, processed=float(seq), real=float(seq), note=note)
    if mean_seq is None and padded_seq is None:
        return Lengths(longest=seq, processed=float(seq), real=float(seq))
    if padded_seq is not None:
        real = mean_seq if mean_seq is not None else padded_seq
        if real > padded_seq:
            raise ConfigError(f"--mean-seq {real:g} is longer than --padded-seq {padded_seq:g}")
        return Lengths(longest=seq, processed=float(padded_seq), real=float(real),
                       note=f"padding to the longest in each micro-batch: {padded_seq:,.0f} positions per row as "
                            f"stated (--padded-seq), {real:,.0f} real; memory at the longest batch, {seq:,}")
    b = micro_batch
    spread = min(float(seq), 2 * mean_seq - 1)
    processed = min(float(seq), 1 + (spread - 1) * b / (b + 1)) if b > 1 else float(mean_seq)
    return Lengths(longest=seq, processed=max(processed, float(mean_seq)), real=float(mean_seq),
                   note=f"padding to the longest in each micro-batch of {b}: samples of mean {mean_seq:,.0f} tokens "
                        f"taken as spread evenly up to {spread:,.0f}, so about {max(processed, mean_seq):,.0f} "
                        f"positions per row are computed (--padded-seq states a measured one); time at that, "
                        f"memory at the longest batch, {seq:,}")
