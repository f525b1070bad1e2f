// NVRTC, loaded on first use: nvrtc_loader.cc defines the NVRTC functions the plan compiler calls
// as forwarders to libnvrtc.so, which it dlopens the first time one is called, so that programs
// that link the channel executor but compile no plan do not pay NVRTC's start-up (about 0.5 s and
// 30 MB). When the library cannot be loaded the forwarders fail with NVRTC_ERROR_INTERNAL_ERROR
// and LoadNvrtc says why.
#ifndef VDEV_SRC_CHANNELS_INTERNAL_NVRTC_LOADER_H_
#define VDEV_SRC_CHANNELS_INTERNAL_NVRTC_LOADER_H_

#include "absl/status/status.h"

namespace vdev::channels::internal {

// Loads NVRTC if it is not yet loaded; OK once its every function vdev uses was found.
absl::Status LoadNvrtc();

}  // namespace vdev::channels::internal

#endif  // VDEV_SRC_CHANNELS_INTERNAL_NVRTC_LOADER_H_
