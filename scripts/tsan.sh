#!/usr/bin/env bash
# ThreadSanitizer on the multi-threaded and multi-process parts: the runtime (sessions, launcher, IPC
# allocator, host all-reduce), the controller and the executor. Builds only their test binaries (and
# what they run: vdev, the test worker) in build-tsan/ and runs their tests; extra arguments go to ctest.
# Not part of CI (the 30-minute budget); run it by hand: bash scripts/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export SANITIZE_TARGETS="runtime_test controller_test executor_test"
exec bash scripts/sanitize.sh thread \
  -R '^(PeerGroupTest|LaunchTest|HostIPCMemoryTest|HostAllReduce[A-Za-z]*|ZeroCopyAllReduce[A-Za-z]*|LLFlagTest|LLSweepTest|FaultTest|ProcessFaultTest|Executor[A-Za-z]*|NpyTest|RunLibraryTest|RunReference|CompareOutputs|ReduceInRankOrder|Summarize)\.' "$@"
