// The NVRTC functions of compiled_plan.cc, forwarded to libnvrtc.so loaded on first use
// (internal/nvrtc_loader.h). Their declarations come from nvrtc.h, so a signature that drifted from
// the library's would not compile.
#include "internal/nvrtc_loader.h"

#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include "absl/strings/str_cat.h"
#include "dynload/dynamic_library.h"

namespace vdev::channels::internal {
namespace {

// X(name) for every NVRTC function vdev calls.
// clang-format off: one function per line
#define VDEV_NVRTC_FUNCTIONS(X) \
  X(nvrtcCompileProgram)        \
  X(nvrtcCreateProgram)         \
  X(nvrtcDestroyProgram)        \
  X(nvrtcGetCUBIN)              \
  X(nvrtcGetCUBINSize)          \
  X(nvrtcGetErrorString)        \
  X(nvrtcGetProgramLog)         \
  X(nvrtcGetProgramLogSize)
// clang-format on

struct Nvrtc {
#define VDEV_POINTER(name) decltype(&::name) name = nullptr;
  VDEV_NVRTC_FUNCTIONS(VDEV_POINTER)
#undef VDEV_POINTER
  absl::Status status;
};

const Nvrtc& Library() {
  static const Nvrtc* const library = [] {
    auto* nvrtc = new Nvrtc;
    dynload::DynamicLibrary so =
        dynload::DynamicLibrary::Open(absl::StrCat("libnvrtc.so.", CUDART_VERSION / 1000), VDEV_CUDA_LIBRARY_DIR);
#define VDEV_FIND(name) so.Find(#name, nvrtc->name);
    VDEV_NVRTC_FUNCTIONS(VDEV_FIND)
#undef VDEV_FIND
    nvrtc->status = so.status();
    return nvrtc;
  }();
  return *library;
}

}  // namespace

absl::Status LoadNvrtc() { return Library().status; }

}  // namespace vdev::channels::internal

// The forwarders: each calls the library's function once it is loaded.
#define VDEV_FORWARD(name, params, args)                                                \
  nvrtcResult name params {                                                             \
    const vdev::channels::internal::Nvrtc& nvrtc = vdev::channels::internal::Library(); \
    return nvrtc.status.ok() ? nvrtc.name args : NVRTC_ERROR_INTERNAL_ERROR;            \
  }

extern "C" {
VDEV_FORWARD(nvrtcCompileProgram, (nvrtcProgram program, int count, const char* const* options),
             (program, count, options))
VDEV_FORWARD(nvrtcCreateProgram,
             (nvrtcProgram * program, const char* source, const char* name, int count, const char* const* headers,
              const char* const* include_names),
             (program, source, name, count, headers, include_names))
VDEV_FORWARD(nvrtcDestroyProgram, (nvrtcProgram * program), (program))
VDEV_FORWARD(nvrtcGetCUBIN, (nvrtcProgram program, char* cubin), (program, cubin))
VDEV_FORWARD(nvrtcGetCUBINSize, (nvrtcProgram program, size_t* size), (program, size))
VDEV_FORWARD(nvrtcGetProgramLog, (nvrtcProgram program, char* log), (program, log))
VDEV_FORWARD(nvrtcGetProgramLogSize, (nvrtcProgram program, size_t* size), (program, size))

const char* nvrtcGetErrorString(nvrtcResult result) {
  const vdev::channels::internal::Nvrtc& nvrtc = vdev::channels::internal::Library();
  return nvrtc.status.ok() ? nvrtc.nvrtcGetErrorString(result) : "NVRTC could not be loaded";
}
}
