#!/bin/sh
# The day a GPU is lent: everything this project has never measured on a GPU, in ONE call of the device tool, with
# no network, every figure under $OUT as it is measured (docs/gpu.md, "The GPU day").
#
# Here, once: `make gpu-day-bundle` (the trimmed llama.cpp source and the gguf wheel, into .gpu-day/, ignored by git).
# There: run with carry [".gpu-day"] and timeout_s 600:   sh .ci/gpu-day.sh
#
# 1. the rehearsal (python3 -m bench.rehearsal): first, in the background, a CUDA llama-server built from the carried
#    source for the card's architecture (the longest step, given the budget less the serving's); beside it the
#    inventory, NVML calls, known allocations and the sampler's cost; then that server serving a tiny model on the
#    card, its memory three ways; BUDGET_S seconds in all (default 420), each step under its own deadline;
# 2. with the server it built, `pytest tests/gpu` (the sampler against 10 GiB, the servers' buffers against NVML),
#    in what is left of GPU_DAY_S (default 540: a 600 s command, with room to spare).
# Files back: figures.jsonl, rehearsal.json, rehearsal.txt, build.log, gpu-tests.txt, gpu-tests.xml (6 of 8).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:?OUT names the folder whose files come back}
bundle=${GPU_DAY_BUNDLE:-$here/.gpu-day}
started=$(date +%s)
mkdir -p "$out"
site=/tmp/gpu-day-site
build=/tmp/gpu-day-llama
if ls "$bundle"/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$bundle"/*.whl \
        >"$out/gpu-tests.txt" 2>&1 || echo "gpu-day: the carried wheels did not install (see gpu-tests.txt)"
fi
PYTHONPATH="$site:$here${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH PYTHONUNBUFFERED=1
source_archive=""
for found in "$bundle"/llama.cpp-*-src.tar.xz; do
    if [ -f "$found" ]; then source_archive=$found; fi
done
cd "$here" || exit 2
python3 -m bench.rehearsal --out "$out" --budget-s "${BUDGET_S:-420}" --llama-build "$build" \
    ${source_archive:+--llama-source "$source_archive"} ${DEVICE:+--device "$DEVICE"} ${SIZES:+--sizes "$SIZES"} \
    ${HOLD_S:+--hold-seconds "$HOLD_S"} ${COST_S:+--cost-seconds "$COST_S"}
status=$?
if [ -f "$build/build.log" ]; then tail -n 200 "$build/build.log" >"$out/build.log"; fi
left=$(( ${GPU_DAY_S:-540} - ($(date +%s) - started) ))
if [ -x "$build/build/bin/llama-server" ] && [ "$left" -gt 30 ]; then
    model=$(ls "$build"/tiny.gguf 2>/dev/null || true)
    LLAMA_SERVER="$build/build/bin/llama-server" SMALL_MODEL="${model:-}" timeout "$left" \
        python3 -m pytest tests/gpu -q -p no:cacheprovider --run-gpu --junitxml "$out/gpu-tests.xml" \
        >>"$out/gpu-tests.txt" 2>&1
    echo "gpu-day: tests/gpu exit $? (gpu-tests.txt)"
else
    echo "gpu-day: tests/gpu not run (no llama-server built, or ${left} s left)" >>"$out/gpu-tests.txt"
fi
echo "gpu-day: rehearsal exit $status, $(( $(date +%s) - started )) s; figures in $out"
exit "$status"
