#!/usr/bin/env bash
# Checks that C++ and CUDA sources follow .clang-format, with clang-format-14 (CLANG_FORMAT overrides):
# the files named, or with none every tracked *.cc, *.h, *.cu and *.cuh. Prints each file that would
# change and how many lines, and exits 1 if any would. `--fix` rewrites them in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format-14}
fix=0
if [ "${1:-}" = --fix ]; then fix=1; shift; fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
fi
if [ $fix -eq 1 ]; then
  "$clang_format" -i --style=file "${files[@]}"
  exit 0
fi
changed_files=0
changed_lines=0
for f in "${files[@]}"; do
  if [ ! -f "$f" ]; then echo "$f: no such file" >&2; exit 2; fi
  lines=$("$clang_format" --style=file "$f" | diff "$f" - | grep -c '^[<>]' || true)
  if [ "$lines" -gt 0 ]; then
    echo "$f: $lines lines differ from .clang-format (scripts/check_format.sh --fix $f)"
    changed_files=$((changed_files + 1))
    changed_lines=$((changed_lines + lines))
  fi
done
echo "${#files[@]} files checked; $changed_files would change ($changed_lines diff lines)"
[ $changed_files -eq 0 ]
