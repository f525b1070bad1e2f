// A shared library opened on first use: DynamicLibrary::Open(soname, fallback_dir) dlopens it
// (the library path first, then `fallback_dir`, where the build found it) and Symbol finds a
// function in it; both say why they failed. The loaders of cuBLASLt (src/kernels/cuda) and NVRTC
// (src/channels) open theirs the first time a GPU op needs them, not at program start.
#ifndef VDEV_DYNLOAD_DYNAMIC_LIBRARY_H_
#define VDEV_DYNLOAD_DYNAMIC_LIBRARY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace vdev::dynload {

class DynamicLibrary {
 public:
  // Opens `soname`; status() says whether it could. The library stays loaded for the process.
  static DynamicLibrary Open(const std::string& soname, const std::string& fallback_dir);

  const absl::Status& status() const { return status_; }

  // The address of `name`, or nullptr with status() set to an error naming it.
  void* Symbol(const char* name);

  // Symbol cast to the type of `function` (as declared by the library's header).
  template <typename F>
  void Find(const char* name, F*& function) {
    function = reinterpret_cast<F*>(Symbol(name));
  }

 private:
  void* handle_ = nullptr;
  std::string soname_;
  absl::Status status_;
};

}  // namespace vdev::dynload

#endif  // VDEV_DYNLOAD_DYNAMIC_LIBRARY_H_
