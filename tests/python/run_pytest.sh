#!/usr/bin/env bash
# Runs pytest on the given files for ctest: PYTHON is the interpreter the extension was built for.
# Exit status 5 (pytest collected no tests) becomes a failure with a message: an empty suite, e.g.
# after a rename, must not pass CI silently.
set -uo pipefail
python=$1
shift
"$python" -m pytest -q -p no:cacheprovider "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "error: pytest collected no tests from: $*" >&2
  exit 1
fi
exit "$status"
