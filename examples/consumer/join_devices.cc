// Joins two virtual-device literals with the installed vdev library: join_devices cuda:3 cuda/global
#include <iostream>

#include "vdev/lattice/virtual_device.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: join_devices A B\n";
    return 2;
  }
  absl::StatusOr<vdev::VirtualDevice> a = vdev::ParseVirtualDevice(argv[1]);
  absl::StatusOr<vdev::VirtualDevice> b = vdev::ParseVirtualDevice(argv[2]);
  if (!a.ok() || !b.ok()) {
    std::cerr << (a.ok() ? b.status() : a.status()) << "\n";
    return 2;
  }
  std::optional<vdev::VirtualDevice> joined = vdev::Join(*a, *b);
  std::cout << (joined ? joined->ToString() : "none") << "\n";
  return joined ? 0 : 1;
}
