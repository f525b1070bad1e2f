// The NCCL functions of cuda_communicator.cc, forwarded to libnccl loaded on first use: only a CUDA
// all-reduce that falls back on NCCL needs it, and linked at start it costs every vdev process a
// few milliseconds of dynamic linking. Their declarations come from nccl.h, so a signature that
// drifted from the library's would not compile.
#include <nccl.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dynload/dynamic_library.h"

namespace vdev {
namespace {

// X(name) for every NCCL function vdev calls.
#define VDEV_NCCL_FUNCTIONS(X) \
  X(ncclGetErrorString) X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommDestroy) X(ncclAllReduce)

struct Nccl {
#define VDEV_POINTER(name) decltype(&::name) name = nullptr;
  VDEV_NCCL_FUNCTIONS(VDEV_POINTER)
#undef VDEV_POINTER
  absl::Status status;
  std::string error;  // status's message, for ncclGetErrorString while the library is missing
};

const Nccl& Library() {
  static const Nccl* const library = [] {
    auto* nccl = new Nccl;
    dynload::DynamicLibrary so =
        dynload::DynamicLibrary::Open(absl::StrCat("libnccl.so.", NCCL_MAJOR), VDEV_NCCL_LIBRARY_DIR);
#define VDEV_FIND(name) so.Find(#name, nccl->name);
    VDEV_NCCL_FUNCTIONS(VDEV_FIND)
#undef VDEV_FIND
    nccl->status = so.status();
    nccl->error = std::string(nccl->status.message());
    return nccl;
  }();
  return *library;
}

}  // namespace
}  // namespace vdev

// The forwarders: each calls the library's function once it is loaded; without the library an NCCL
// call fails with ncclSystemError, which ncclGetErrorString then explains as the load failure.
#define VDEV_FORWARD(name, params, args)                        \
  ncclResult_t name params {                                    \
    const vdev::Nccl& nccl = vdev::Library();                   \
    return nccl.status.ok() ? nccl.name args : ncclSystemError; \
  }

extern "C" {
VDEV_FORWARD(ncclGetUniqueId, (ncclUniqueId * id), (id))
VDEV_FORWARD(ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank), (comm, nranks, id, rank))
VDEV_FORWARD(ncclCommDestroy, (ncclComm_t comm), (comm))
VDEV_FORWARD(ncclAllReduce,
             (const void* send, void* receive, size_t count, ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
              cudaStream_t stream),
             (send, receive, count, type, op, comm, stream))

const char* ncclGetErrorString(ncclResult_t result) {
  const vdev::Nccl& nccl = vdev::Library();
  return nccl.status.ok() ? nccl.ncclGetErrorString(result) : nccl.error.c_str();
}
}
