// vdev_worker: the program the workers of vdev.Session.process run, installed next to the
// extension. The controller starts it with the environment that MaybeRunWorker recognises.
#include <cstdio>

#include "vdev/controller/controller.h"

int main(int argc, char** argv) {
  vdev::MaybeRunWorker(argc, argv);
  std::fprintf(stderr, "vdev_worker: runs the workers of vdev.Session.process; it is not started by hand\n");
  return 2;
}
