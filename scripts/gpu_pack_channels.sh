#!/bin/bash
# Packs what scripts/gpu_run_channels.sh needs into DEST (default .gpu-channels/ under this checkout's
# root): the one-GPU plan tests and benchmark (debug info stripped) and the Abseil libraries they link.
# OLD, when set, names another build folder whose test and benchmark go to bin/old/ (the `old_*`
# stages of gpu_run_channels.sh: before and after in one call).
set -e
SRC=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$SRC/.gpu-channels}
rm -rf "$DEST" && mkdir -p "$DEST/bin" "$DEST/lib" "$DEST/scripts"
cp "$SRC/build/tests/channels/channels_cuda_one_gpu_test" "$SRC/build/tests/channels/channels_cuda_executor_test" \
  "$SRC/build/bench/channels_one_gpu_bench" "$DEST/bin/"
if [ -n "${OLD:-}" ]; then
  mkdir -p "$DEST/bin/old"
  for built in tests/channels/channels_cuda_one_gpu_test bench/channels_one_gpu_bench; do  # whichever it built
    if [ -x "$OLD/$built" ]; then cp "$OLD/$built" "$DEST/bin/old/"; fi
  done
fi
strip --strip-debug "$DEST"/bin/channels_* "$DEST"/bin/old/* 2>/dev/null || true
for lib in $(ldd "$DEST"/bin/channels_* "$DEST"/bin/old/* 2>/dev/null | awk '/libabsl|libz3|libgtest|libgmock/ {print $3}' | sort -u); do
  cp -L "$lib" "$DEST/lib/"
done
cp "$SRC/scripts/gpu_run_channels.sh" "$DEST/scripts/"
du -sh "$DEST"
