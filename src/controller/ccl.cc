// InitCCL on a worker: the workers' vdev::PeerGroup, then the IPC allocator and all-reduce of the
// requested kind ("host" here; the CUDA kinds in cuda_ccl.cc).
#include "internal/ccl.h"

#include "absl/strings/str_cat.h"
#include "vdev/runtime/allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev::internal {
namespace {

absl::StatusOr<DataType> HostDataType(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF32: return DataType::kF32;
    case ir::DType::kF64: return DataType::kF64;
    case ir::DType::kI32: return DataType::kI32;
    case ir::DType::kF16: return DataType::kF16;
    case ir::DType::kBF16: return DataType::kBF16;
    default:
      return absl::InvalidArgumentError(absl::StrCat("all-reduce of ", ir::DTypeName(dtype), " is not supported"));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<CclState>> CreateCcl(const CclRequest& request) {
  const PeerGroupOptions options{.rank = request.rank,
                                 .world_size = request.world_size,
                                 .local_rank = request.local_rank,
                                 .rendezvous_dir = request.rendezvous_dir,
                                 .session_id = request.session_id,
                                 .timeout = request.timeout};
  auto state = std::make_unique<CclState>();
  state->kind = request.kind;
  VDEV_ASSIGN_OR_RETURN(state->session, PeerGroup::Create(options));
  if (request.kind != "host") {
    VDEV_RETURN_IF_ERROR(AddCudaCcl(request, state.get()));
    return state;
  }
  VDEV_ASSIGN_OR_RETURN(state->allocator, CreateHostIPCAllocator(state->session.get()));
  PeerGroup* session = state->session.get();
  IPCAllocator* allocator = state->allocator.get();
  state->all_reduce = [session, allocator](const HostTensor& in, HostTensor* out) -> absl::Status {
    VDEV_ASSIGN_OR_RETURN(DataType type, HostDataType(in.dtype));
    const size_t count = static_cast<size_t>(in.NumElements());
    // The pool hands the same workspace back to the next all-reduce of this size.
    VDEV_ASSIGN_OR_RETURN(IPCMemory * workspace, allocator->Allocate(AllReduceWorkspaceBytes(
                                                     AllReduceAlgorithm::kAuto, session->world_size(), count, type)));
    absl::Status status =
        HostAllReduce(*session, *workspace, in.bytes.data(), out->bytes.data(), count, type, AllReduceAlgorithm::kAuto);
    allocator->Free(workspace);
    return status;
  };
  return state;
}

}  // namespace vdev::internal
