// A two-rank broadcast whose port and memory channels share tag 0: rank 0 port-puts its input into
// rank 1's scratch with a signal, rank 1 copies it out and acknowledges through a memory channel.
// Port channels count in semaphores of their own (docs/channels.md), so the port signal meets only
// the port wait and the acknowledgement only the memory wait. Run by the host executor's and the
// CUDA executor's tests alike.
#ifndef VDEV_TESTS_CHANNELS_PORT_AND_MEMORY_PROGRAM_H_
#define VDEV_TESTS_CHANNELS_PORT_AND_MEMORY_PROGRAM_H_

#include "vdev/channels/channel_program.h"

namespace vdev::channels::testing {

// Adds the ops to `p`, a broadcast from rank 0 over 2 ranks with one scratch chunk.
inline void AddPortAndMemoryChannelsOnOneTag(Program& p) {
  PortChannel put = p.AddPortChannel(1, 0), put_wait = p.AddPortChannel(0, 1);
  MemoryChannel ack = p.AddMemoryChannel(0, 1), ack_wait = p.AddMemoryChannel(1, 0);
  p.Copy(0, p.Output(0, 0), p.Input(0, 0));
  put.PutWithSignal(0, p.Scratch(1, 0), p.Input(0, 0));
  put_wait.Wait(0);
  p.Copy(0, p.Output(1, 0), p.Scratch(1, 0));
  ack.Signal(0);
  ack_wait.Wait(0);
}

}  // namespace vdev::channels::testing

#endif  // VDEV_TESTS_CHANNELS_PORT_AND_MEMORY_PROGRAM_H_
