"""Memory and time of reading a large safetensors header (issue 14: a 96 MiB header of 1.7 M tensor
entries; target: peak RSS at most 4x the header's size).

Builds the file in a temporary folder, then reads its header in a fresh process per run and prints
one table: header size, entries, wall time, peak RSS of the reading process (VmHWM), and the RSS
of the same process before reading (Python + sizeup imported). Pass another source tree to compare,
e.g. `python benchmarks/header_memory.py /work/main/src`.

Run from the repo root: python benchmarks/header_memory.py [SRC ...]
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRIES = 1_700_000
HEADER_BYTES = 96 * 2**20

_CHILD = """
import json, sys, time

def hwm():  # the process's peak resident set (VmHWM: reset at exec, unlike ru_maxrss)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

from sizeup.ingest.headers import read_safetensors_header
before = hwm()
t0 = time.perf_counter()
h = read_safetensors_header(sys.argv[1])
wall = time.perf_counter() - t0
print(json.dumps({"wall_s": wall, "peak_bytes": hwm(), "before_bytes": before, "params": h.params}))
"""


def build(path: Path, entries: int = ENTRIES, header_bytes: int = HEADER_BYTES) -> int:
    """A safetensors file of `entries` empty F16 tensors (the shortest valid entries: 1.7 M of them
    fill about 96 MiB), the header padded with spaces (as the format allows) to `header_bytes`;
    returns the header's length."""
    parts = [f'"{i:x}":{{"dtype":"F16","shape":[0],"data_offsets":[0,0]}}' for i in range(entries)]
    blob = ("{" + ",".join(parts) + "}").encode()
    blob += b" " * max(0, header_bytes - len(blob))
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(blob)))
        fh.write(blob)
    return len(blob)


def measure(path: Path, src: str) -> dict:
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], env=env, capture_output=True, text=True,
                         timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    sources = sys.argv[1:] or [str(ROOT / "src")]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.safetensors"
        size = build(path)
        print("| source | header (MiB) | entries | wall (s) | peak RSS (MiB) | RSS before read (MiB) | peak / header |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        # json.loads of the same text, as a yardstick of how loaded the machine is
        yard = subprocess.run([sys.executable, "-c", "import json,sys,time; b=open(sys.argv[1],'rb').read()[8:]; "
                               "t=time.perf_counter(); json.loads(b); print(time.perf_counter()-t)", str(path)],
                              capture_output=True, text=True, timeout=600, check=True).stdout.strip()
        for src in sources:
            r = measure(path, src)
            print(f"| {src} | {size / 2**20:.1f} | {ENTRIES:,} | {r['wall_s']:.2f} | {r['peak_bytes'] / 2**20:.0f} | "
                  f"{r['before_bytes'] / 2**20:.0f} | {r['peak_bytes'] / size:.2f} |")
        print(f"(json.loads of the same header in this run: {float(yard):.2f} s)")


if __name__ == "__main__":
    main()
