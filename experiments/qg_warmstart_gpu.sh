#!/usr/bin/env bash
# The warm-start QG recipe on one GPU, in one command: train (3,000 steps of 64, about 6 min on an H200)
# (experiments/qg_warmstart.py, bf16 autocast), evaluate the checkpoint from gold answers on the held-out
# SQuAD 2.0 articles (greedy, CPU, the protocol of bench/RESULTS_generators.md), export it to int8 ONNX.
#
#   experiments/qg_warmstart_gpu.sh ENCODER_DIR SQUAD11_TRAIN EVAL_SQUAD RUN_DIR
#
# Environment (defaults in brackets: the recipe measured on an H200 in bench/RESULTS_generators.md, 353 s of
# training): STEPS [3000], BUDGET seconds of training [0: none; else STEPS becomes what fits], BATCH [64], LR [2e-4],
# WARMUP [500], DEVICE [cuda], WORKERS feature processes [12], EVAL_N held-out questions [300], THREADS for the
# evaluation [16], EXPORT [1] (0: no ONNX export).
# RUN_DIR gets checkpoint.pt, log.jsonl, eval_step*_n*.json and onnx-int8/ (a pysynth.warmstart.onnx store).
set -euo pipefail
enc=$1 train=$2 evalset=$3 run=$4
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
bf16=--bf16
[ "${DEVICE:-cuda}" = cpu ] && bf16=
"$py" "$here/qg_warmstart.py" --out "$run" --encoder "$enc" --data "$train" --device "${DEVICE:-cuda}" $bf16 \
    --batch-size "${BATCH:-64}" --lr "${LR:-2e-4}" --warmup "${WARMUP:-500}" --steps "${STEPS:-3000}" \
    --time-budget "${BUDGET:-0}" --max-source-len 192 --workers "${WORKERS:-12}" --threads 4 \
    --save-every 1000000 --log-every "${LOG_EVERY:-100}" --dev-every "${DEV_EVERY:-500}"
"$py" "$here/qg_warmstart.py" --out "$run" --encoder "$enc" --eval "${EVAL_N:-300}" --eval-squad "$evalset" \
    --threads "${THREADS:-16}" --no-baseline
[ "${EXPORT:-1}" = 0 ] && exit 0
"$py" - "$run" "$enc" <<'PY'
import json, sys, time
from pathlib import Path
from pysynth.export.warmstart import export_warmstart_onnx
from pysynth.models.warmstart import load_checkpoint

run, enc = Path(sys.argv[1]), Path(sys.argv[2])
model, state = load_checkpoint(run / "checkpoint.pt", restore_rng=False)
t = time.perf_counter()
out = export_warmstart_onnx(model, run / "onnx-int8", enc / "vocab.txt", quantize=True,
                            extra_meta={"step": state["step"]})
print(json.dumps({"event": "exported", "seconds": round(time.perf_counter() - t, 1),
                  "files": {p.name: p.stat().st_size for p in sorted(out.iterdir())}}), flush=True)
PY
