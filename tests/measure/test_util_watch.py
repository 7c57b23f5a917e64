"""`sizeup watch --util` for real on this machine (no GPU: the CPU, disk and step parts): a CPU-bound job, a
job writing to disk, a job reporting its steps."""

import json
import sys

import pytest

pytest.importorskip("psutil")

from sizeup.cli.main import main  # noqa: E402
from sizeup.measure.util_watch import UtilConfig, watch_util  # noqa: E402
from sizeup.errors import ConfigError  # noqa: E402

SPIN = "import time\nend = time.time() + {s}\nwhile time.time() < end:\n    sum(range(20000))\n"


def test_a_busy_loop_is_cpu_bound_on_one_core(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SIZEUP_DATA_DIR", str(tmp_path))
    code = main(["watch", "--util", "--interval", "0.25s", "--duration", "10s", "--gpu-source", "none", "--json",
                 "--", sys.executable, "-c", SPIN.format(s=2.5)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["ended"] == "exited" and out["gpu_source"] == "none"
    verdict = out["diagnosis"]["verdict"]
    numbers = out["diagnosis"]["numbers"]
    # the job wants one core: what it got plus what it waited for in the run queue (the machine is shared)
    assert numbers["job_cpu_pct"] + (numbers["job_runqueue_pct"] or 0) > 80
    assert verdict in ("cpu-bound-one-core", "cpu-bound"), out["diagnosis"]
    assert out["run_id"] is not None


def test_disk_writes_are_seen(tmp_path):
    target = tmp_path / "blob"
    job = (f"import os, time\nbuf = os.urandom(4 << 20)\nwith open({str(target)!r}, 'wb') as f:\n"
           "    for _ in range(12):\n        f.write(buf); f.flush(); os.fsync(f.fileno()); time.sleep(0.1)\n")
    result = watch_util(UtilConfig(command=(sys.executable, "-c", job), interval_s=0.25, duration_s=15, gpu="none"))
    written = sum(s.disk_write_bytes_per_s * result.interval_s for s in result.host)
    assert written >= 0.5 * 48 * 2**20  # at least half of the 48 MiB the job synced (other writers only add)
    assert all(s.disk_busy_pct is None or 0 <= s.disk_busy_pct <= 100 for s in result.host)


def test_steps_reported_by_the_job_are_read():
    job = ("import os, time\nf = open(os.environ['SIZEUP_STEP_FILE'], 'a')\nfor i in range(20):\n"
           "    time.sleep(0.02)\n    print(0.5 if i % 10 == 9 else 0.02, file=f, flush=True)\n")
    result = watch_util(UtilConfig(command=(sys.executable, "-c", job), interval_s=0.2, duration_s=15, gpu="none"))
    assert len(result.steps) == 20
    assert result.diagnosis.numbers["step_spikes"] == 2 and result.diagnosis.numbers["step_median_s"] == 0.02


def test_bad_targets():
    with pytest.raises(ConfigError, match="not both"):
        UtilConfig(pid=1, command=("true",))
    with pytest.raises(ConfigError, match="--gpu-source"):
        UtilConfig(pid=1, gpu="cuda")


def test_missing_tools_are_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["watch", "--util", "--gpu-source", "tegrastats", "--duration", "1s", "--", sys.executable, "-c",
                 "pass"]) == 1
    assert "tegrastats is not on the PATH" in capsys.readouterr().err
