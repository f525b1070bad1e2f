// Whether a running kernel's acquire poll sees a word written by each kind of writer the plan
// executor's waits depend on, and how soon: another kernel's release store (memory channels'
// signals) and a copy engine's copy (port channels'). A probe of the platform and of tools that run
// the kernels (compute-sanitizer), not of vdev's code.
#ifndef VDEV_TESTS_CHANNELS_REMOTE_WRITE_PROBE_H_
#define VDEV_TESTS_CHANNELS_REMOTE_WRITE_PROBE_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace vdev::channels::testing {

enum class RemoteWriter { kKernelStore, kCopyEngine };

// Launches a one-thread kernel that polls a zeroed word of device memory until it reads 1 or `bound`
// passes, writes the word after `delay` with `writer` while the kernel runs, and returns how long
// after the write the kernel saw it; DeadlineExceeded when it never did. Every kernel involved has
// run once before (CUDA loads a module at its first launch, and may wait for the device to be idle
// to do so: a first launch behind a polling kernel would not start until the poll gave up).
absl::StatusOr<absl::Duration> ProbeRemoteWrite(RemoteWriter writer, absl::Duration delay, absl::Duration bound);

}  // namespace vdev::channels::testing

#endif  // VDEV_TESTS_CHANNELS_REMOTE_WRITE_PROBE_H_
