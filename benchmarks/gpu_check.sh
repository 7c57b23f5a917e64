#!/usr/bin/env bash
# The whole GPU check on a CUDA machine, in one script (target: under 8 minutes): a sweep with
# per-kind profiles, calibration, the term-by-term comparison, collectives on the GPUs present, and
# the CUDA tests. Tables go to one folder: $1, or $OUT on the device machine, or ./gpu-check.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-check}}"
mkdir -p "$out"
export SIZEUP_DATA_DIR="$out" PYTHONPATH=src PYTHONUNBUFFERED=1
python -m sizeup hw local | tee "$out/hw_local.txt"
python -m sizeup measure sizeup.examples.zoo:resnet50 --input 1x3x224x224 --device cuda --dtype fp16 \
  --batch 1,4,16,64,256 --budget 120s --profile | tee "$out/sweep_resnet50.txt"
python -m sizeup measure sizeup.examples.zoo:gpt2_small --input-spec int64:1x512 --device cuda --dtype fp16 \
  --batch 1,4,16 --budget 90s --profile | tee "$out/sweep_gpt2.txt"
python -m sizeup calibrate --quick --device cuda | tee "$out/calibrate_quick.txt"
python -m sizeup calibrate --device cuda | tee "$out/calibrate_fit.txt"
for run in $(python -m sizeup runs list --json | python -c "import json,sys; print(' '.join(str(r['id']) for r in json.load(sys.stdin)['runs'] if r['kind']=='inference'))"); do
  python -m sizeup compare "$run" | tee "$out/compare_$run.txt"
done
gpus=$(python -c "import torch; print(torch.cuda.device_count())")
if [ "$gpus" -ge 2 ]; then
  python -m sizeup measure --collectives --device cuda --world-size "$gpus" | tee "$out/collectives.txt"
else
  python -m sizeup measure --collectives --device cpu --world-size 2 | tee "$out/collectives_gloo.txt"
fi
python -m pytest -q -m gpu tests/gpu | tee "$out/gpu_tests.txt"
cp "$SIZEUP_DATA_DIR/runs.sqlite" "$out/" 2>/dev/null || true
