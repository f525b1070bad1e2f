// A two-rank broadcast whose ranks have different numbers of thread blocks: rank 0 has one block
// for its channel ops and `copy_blocks` more for the copy of its own output, rank 1 has one. Rank 1
// first signals that its output is free, rank 0 waits for that, puts its input into rank 1's output
// and signals; rank 1 waits for the data. With `port`, the channels are port channels (the put with
// a flush), else memory channels. Executors that pick instances by size must pick the same number
// on both ranks (a channel's semaphores and data parts are per instance) though only rank 0's grid
// is wide. Run by the CUDA executor's tests and its instance choice's.
#ifndef VDEV_TESTS_CHANNELS_UNEVEN_THREAD_BLOCKS_PROGRAM_H_
#define VDEV_TESTS_CHANNELS_UNEVEN_THREAD_BLOCKS_PROGRAM_H_

#include "absl/status/statusor.h"
#include "vdev/channels/channel_program.h"

namespace vdev::channels::testing {

inline absl::StatusOr<ProgramSpec> UnevenThreadBlocksBroadcast(int copy_blocks, bool port) {
  Program p(port ? "uneven_port_broadcast" : "uneven_broadcast", Collective::kBroadcast, /*world_size=*/2);
  if (port) {
    PortChannel to_peer = p.AddPortChannel(/*dst=*/1, /*src=*/0), to_root = p.AddPortChannel(/*dst=*/0, /*src=*/1);
    to_root.Signal(0);
    to_root.Wait(0);
    to_peer.Wait(0);
    to_peer.PutWithSignalAndFlush(0, p.Output(1, 0), p.Input(0, 0));
  } else {
    // A memory channel's ops are its source rank's; a wait meets the reverse channel's signals.
    MemoryChannel root = p.AddMemoryChannel(/*dst=*/1, /*src=*/0), peer = p.AddMemoryChannel(/*dst=*/0, /*src=*/1);
    peer.Signal(0);
    root.Wait(0);
    root.Put(0, p.Output(1, 0), p.Input(0, 0));
    root.Signal(0);
    peer.Wait(0);
  }
  p.Copy(Tb(1, copy_blocks), p.Output(0, 0), p.Input(0, 0));
  return std::move(p).Build();
}

}  // namespace vdev::channels::testing

#endif  // VDEV_TESTS_CHANNELS_UNEVEN_THREAD_BLOCKS_PROGRAM_H_
