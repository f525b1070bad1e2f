#!/bin/bash
# Packs the Python package for the GPU machine's interpreter into DEST (default .gpu-python/ under this
# checkout's root). The GPU machine runs Python 3.12 and this Debian builds the extension for 3.11, so
# the extension's objects are compiled again, with the commands CMake wrote for build/, against the GPU
# machine's Python headers: HEADERS is a folder holding its usr/include/python3.X and
# usr/include/x86_64-linux-gnu/python3.X (fetch them with the device command in BUILD_NOTES.md).
# The package gets the pure-Python sources, vdev_worker and the Abseil/Z3/OpenBLAS libraries (in lib/).
# Usage: scripts/gpu_pack_python.sh HEADERS [PYTHON_VERSION (3.12)] [DEST]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
HEADERS=$(cd "${1:?usage: gpu_pack_python.sh HEADERS [PYTHON_VERSION] [DEST]}" && pwd)
VERSION=${2:-3.12}
DEST=${3:-$SRC/.gpu-python}
BUILD=$SRC/build
[ -d "$HEADERS/usr/include/python$VERSION" ] || { echo "no usr/include/python$VERSION under $HEADERS" >&2; exit 2; }
[ -d "$BUILD/python/vdev" ] || { echo "build the tree first (scripts/build.sh): no $BUILD/python/vdev" >&2; exit 2; }

suffix=".cpython-${VERSION/./}-x86_64-linux-gnu.so"
objects=$(mktemp -d)
trap 'rm -rf "$objects"' EXIT
rm -rf "$DEST" && mkdir -p "$DEST/vdev" "$DEST/lib"

# The build's commands for the extension, with the interpreter's include folder swapped for the GPU
# machine's and the objects written elsewhere (build/ stays as it is).
commands=$(ninja -C "$BUILD" -t commands vdev_python_extension | grep 'vdev_python_extension.dir/')
python_include="-isystem $HEADERS/usr/include/python$VERSION -isystem $HEADERS/usr/include"
compile_lines=$(grep -- ' -c ' <<<"$commands" | grep -v -- '-shared')
while IFS= read -r line; do
  line=$(sed -E -e "s# -isystem [^ ]*/python3\.[0-9]+# $python_include#" -e 's# -MD -MT [^ ]+ -MF [^ ]+##' \
    -e "s# -o src/python/CMakeFiles/vdev_python_extension.dir/# -o $objects/#" -e 's#^ccache ##' <<<"$line")
  (cd "$BUILD" && eval "$line") &
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
done <<<"$compile_lines"
wait
link=$(grep -- '-shared' <<<"$commands" | sed -E -e 's#^: && ##' -e 's# && :$##' \
  -e "s#src/python/CMakeFiles/vdev_python_extension.dir/#$objects/#g" \
  -e "s#python/vdev/_vdev\.cpython-[0-9]+-x86_64-linux-gnu\.so#$DEST/vdev/_vdev$suffix#")
(cd "$BUILD" && eval "$link")

cp "$BUILD"/python/vdev/*.py "$BUILD"/python/vdev/*.pyi "$BUILD"/python/vdev/py.typed "$BUILD/python/vdev/vdev_worker" \
  "$DEST/vdev/"
strip --strip-debug "$DEST/vdev/_vdev$suffix" "$DEST/vdev/vdev_worker"
for lib in $(ldd "$DEST/vdev/_vdev$suffix" "$DEST/vdev/vdev_worker" |
             awk '/libabsl|libz3|libopenblas|libgfortran|libquadmath/ {print $3}' | sort -u); do
  cp -L "$lib" "$DEST/lib/"
done
du -sh "$DEST"
