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

# ---- pre-launch checks (issue 33): NVML sampling, the watch's verdict, CUDA data loading ----------------------
# watch --util on a GPU-bound sweep (expect gpu-bound / memory-bound, or throttled with the clock lost) and on a
# CPU-starved training trial (expect input-bound); a trial on CUDA with 2 loader workers scaled to 20 epochs,
# beside the traced prediction for the same GPU; the loader beside the GPU's predicted samples/s.
gpu_id=$(python -m sizeup hw local --json | python -c "import json,sys; g=json.load(sys.stdin)['gpus']; print(g[0]['catalog_id'] or '' if g else '')")
python -m sizeup watch --util --interval 0.5s --duration 90s -- python -m sizeup measure sizeup.examples.zoo:resnet50 \
  --input 1x3x224x224 --device cuda --dtype fp16 --batch 128 --budget 40s | tee "$out/watch_util_gpu_bound.txt"
python -m sizeup watch --util --interval 0.5s --duration 120s -- python -m sizeup measure sizeup.examples.zoo:tiny_cnn \
  --train --dataloader tests.measure.loaders:cpu_heavy --steps 100 --device cuda | tee "$out/watch_util_input_bound.txt"
python -m sizeup measure sizeup.examples.zoo:tiny_cnn --train --dataloader tests.measure.loaders:images --steps 50 \
  --device cuda --workers 2 --json > "$out/trial_cuda.json"
trial=$(python -c "import json; print(json.load(open('$out/trial_cuda.json'))['run_id'])")
python -m sizeup train --from-run "$trial" --samples 1600 --epochs 20 | tee "$out/trial_cuda_scaled.txt"
python -c "
import json, sys, time, torch
sys.path.insert(0, '.')
from sizeup.examples.zoo import tiny_cnn
from tests.measure.loaders import images
model = tiny_cnn().cuda(); opt = torch.optim.AdamW(model.parameters(), lr=1e-3); loader = images(num_workers=2)
for x, y in loader:
    torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).backward(); opt.step(); opt.zero_grad(); break
torch.cuda.synchronize(); t = time.perf_counter()
for _ in range(2):
    for x, y in loader:
        torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True)).backward()
        opt.step(); opt.zero_grad()
torch.cuda.synchronize(); print(f'2 epochs measured: {time.perf_counter() - t:.3f} s (the scaled 20-epoch figure / 10 should be within 15%)')
" | tee -a "$out/trial_cuda_scaled.txt"
if [ -n "$gpu_id" ]; then
  python -m sizeup train sizeup.examples.zoo:tiny_cnn --input 32x3x32x32 --device "$gpu_id" --samples 1600 \
    --epochs 20 | tee "$out/train_tiny_cnn_predicted.txt"
  python -m sizeup measure sizeup.examples.zoo:resnet50 --input 64x3x224x224 --train --gpu "$gpu_id" \
    --dataloader tests.measure.loaders:cpu_heavy --workers 0,1,2,4,8 --batches 20 | tee "$out/loader_vs_gpu.txt"
fi
python -m pytest -q -m gpu tests/gpu/test_prelaunch_gpu.py -s | tee "$out/gpu_tests_prelaunch.txt"
