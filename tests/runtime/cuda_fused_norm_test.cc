// The fused all-reduce + add + rms_norm kernel (CudaCommunicator::AllReduceAddRmsNorm) across real
// worker processes, one GPU each, against the CPU reference of vdev.add_rms_norm applied to the
// exact rank-order sum; skipped without enough GPUs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/cuda_test_util.h"
#include "runtime/worker_harness.h"
#include "vdev/kernels/kernels.h"
#include "vdev/runtime/cuda_allreduce.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace {

using testing::CheckOne;
using testing::Cuda;
using testing::ExpectAllOk;
using testing::GpuCount;
using testing::RunWorkers;
using testing::ToFloat;
using testing::UniqueSessionId;

template <typename T>
T Round(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
}
template <typename T>
ir::DType DTypeOf() {
  if constexpr (std::is_same_v<T, float>) return ir::DType::kF32;
  if constexpr (std::is_same_v<T, __half>) return ir::DType::kF16;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return ir::DType::kBF16;
}
// The largest gap between a value and its neighbour, relative to the value (2^-(mantissa bits)).
template <typename T>
float RelativeUlp() {
  if constexpr (std::is_same_v<T, float>) return 0x1p-23f;
  if constexpr (std::is_same_v<T, __half>) return 0x1p-10f;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return 0x1p-7f;
}

// A value in [-2, 2) that every worker can compute for any worker.
float Input(int rank, size_t i, int salt) {
  const uint32_t k = static_cast<uint32_t>(i * 2654435761u + rank * 40503u + salt * 97u);
  return static_cast<float>((k >> 8) % 4096) / 1024.0f - 2.0f;
}

template <typename T>
absl::Status Upload(const std::vector<T>& host, T** device) {
  VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(device), host.size() * sizeof(T))));
  return testing::CopyToDevice(*device, host.data(), host.size() * sizeof(T));
}

// One fused call of rows x hidden. h must equal the reference bitwise: the kernel and the reference
// make the same f32 additions in the same (rank) order and round at the same points. n may differ
// by one unit in the last place of T: the kernel's f32 block sum of squares (a tree of depth ~50)
// and rsqrtf stay within ~1e-5 of the reference's f64 statistics, far below T's half-ulp for f16 and
// bf16, so a rounded value can only land on the other side of a rounding boundary; for f32 the 1e-5
// relative term is that difference itself.
template <typename T>
absl::Status CheckFused(PeerGroup& s, CudaCommunicator& comm, DataType type, size_t rows, size_t hidden, int salt,
                        cudaStream_t stream) {
  const size_t count = rows * hidden;
  std::vector<T> x(count), residual(count), gamma(hidden), sum(count);
  for (size_t i = 0; i < count; ++i) {
    x[i] = Round<T>(Input(s.rank(), i, salt));
    residual[i] = Round<T>(Input(100, i, salt));
    float acc = -0.0f;
    for (int r = 0; r < s.world_size(); ++r) acc += ToFloat(Round<T>(Input(r, i, salt)));
    sum[i] = Round<T>(acc);
  }
  for (size_t i = 0; i < hidden; ++i) gamma[i] = Round<T>(0.5f + Input(200, i, salt) / 4);
  T *dx = nullptr, *dres = nullptr, *dgamma = nullptr, *dh = nullptr, *dn = nullptr;
  VDEV_RETURN_IF_ERROR(Upload(x, &dx));
  VDEV_RETURN_IF_ERROR(Upload(residual, &dres));
  VDEV_RETURN_IF_ERROR(Upload(gamma, &dgamma));
  VDEV_RETURN_IF_ERROR(Upload(std::vector<T>(count), &dh));
  VDEV_RETURN_IF_ERROR(Upload(std::vector<T>(count), &dn));
  const AddRmsNormBuffers b{
      .in = dx, .residual = dres, .gamma = dgamma, .sum = dh, .normed = dn, .rows = rows, .hidden = hidden};
  if (!comm.FusesAddRmsNorm(b, type))
    return absl::InternalError(absl::StrCat(rows, "x", hidden, " ", DataTypeName(type), " not fused"));
  VDEV_RETURN_IF_ERROR(comm.AllReduceAddRmsNorm(b, type, stream));
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream)));
  VDEV_RETURN_IF_ERROR(comm.CheckErrors());
  std::vector<T> h(count), n(count), want_h(count), want_n(count);
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(h.data(), dh, count * sizeof(T), cudaMemcpyDeviceToHost)));
  VDEV_RETURN_IF_ERROR(Cuda(cudaMemcpy(n.data(), dn, count * sizeof(T), cudaMemcpyDeviceToHost)));
  for (T* p : {dx, dres, dgamma, dh, dn}) cudaFree(p);

  const Shape shape = {static_cast<int64_t>(rows), static_cast<int64_t>(hidden)};
  const TensorRef ins[] = {{residual.data(), DTypeOf<T>(), shape},
                           {sum.data(), DTypeOf<T>(), shape},
                           {gamma.data(), DTypeOf<T>(), Shape{static_cast<int64_t>(hidden)}}};
  const TensorRef outs[] = {{want_h.data(), DTypeOf<T>(), shape}, {want_n.data(), DTypeOf<T>(), shape}};
  KernelAttrs attrs;
  attrs.Set("epsilon", 1e-6);
  const KernelFn reference = KernelRegistry::Global().Find("vdev.add_rms_norm", DeviceType::kCPU);
  if (reference == nullptr) return absl::InternalError("no CPU vdev.add_rms_norm");
  VDEV_RETURN_IF_ERROR(reference(KernelCall{.inputs = ins, .outputs = outs, .attrs = &attrs}));
  const std::string what = absl::StrCat(DataTypeName(type), " ", rows, "x", hidden, " salt ", salt, ": ");
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(&h[i], &want_h[i], sizeof(T)) != 0)
      return absl::InternalError(absl::StrCat(what, "h[", i, "] is ", ToFloat(h[i]), ", want ", ToFloat(want_h[i])));
    const float got = ToFloat(n[i]), want = ToFloat(want_n[i]);
    if (!(std::fabs(got - want) <= std::fabs(want) * (RelativeUlp<T>() + 1e-5f)))
      return absl::InternalError(absl::StrCat(what, "n[", i, "] is ", got, ", want ", want));
  }
  return absl::OkStatus();
}

absl::Status FusedSums(PeerGroup& s) {
  VDEV_ASSIGN_OR_RETURN(std::unique_ptr<CudaCommunicator> comm, CudaCommunicator::Create(&s, {}));
  if (!comm->ipc_available()) return absl::FailedPreconditionError("no P2P between the GPUs");
  cudaStream_t stream;
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  // Rows of 1, 2 and 4 packs a thread, rows shorter than a warp's packs, more rows than blocks (rows
  // loop in a block), and the tensor-parallel model's 256 x 4096.
  const std::pair<size_t, size_t> shapes[] = {{1, 8}, {3, 24}, {5, 520}, {300, 1024}, {2, 8192}, {256, 4096}};
  int salt = 0;
  for (const auto& [rows, hidden] : shapes) {
    for (int repeat = 0; repeat < 3; ++repeat) {  // back to back: both workspace halves, sentinel restored
      ++salt;
      VDEV_RETURN_IF_ERROR(CheckFused<float>(s, *comm, DataType::kF32, rows, hidden, salt, stream));
      VDEV_RETURN_IF_ERROR(CheckFused<__half>(s, *comm, DataType::kF16, rows, hidden, salt, stream));
      VDEV_RETURN_IF_ERROR(CheckFused<__nv_bfloat16>(s, *comm, DataType::kBF16, rows, hidden, salt, stream));
    }
    // The sentinel all-reduce shares the workspace: it still finds every slot empty.
    VDEV_RETURN_IF_ERROR(testing::CheckOne<__nv_bfloat16>(
        s, *comm, DataType::kBF16, AllReduceAlgorithm::kOneShotSentinel, rows * hidden, false, salt, stream));
  }
  // Refused: rows not a whole number of 16-byte packs, and a message in the two-shot range.
  char* p = nullptr;
  VDEV_RETURN_IF_ERROR(Cuda(cudaMalloc(reinterpret_cast<void**>(&p), 256)));
  const AddRmsNormBuffers odd{.in = p, .residual = p, .gamma = p, .sum = p, .normed = p, .rows = 2, .hidden = 7};
  AddRmsNormBuffers large = odd;
  large.rows = 4096;
  large.hidden = 4096;
  cudaFree(p);
  if (comm->FusesAddRmsNorm(odd, DataType::kBF16) || comm->FusesAddRmsNorm(large, DataType::kBF16))
    return absl::InternalError("a shape past the fused kernel's range was accepted");
  if (comm->AllReduceAddRmsNorm(odd, DataType::kBF16, stream).code() != absl::StatusCode::kInvalidArgument)
    return absl::InternalError("an unfused shape was not refused");
  VDEV_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream)));
  return s.Barrier("fused done");
}

TEST(CudaFusedNormTest, MatchesTheCpuReferenceOnTwoGpus) {
  REQUIRE_GPUS(2);
  ExpectAllOk(RunWorkers(2, UniqueSessionId(), FusedSums));
}

TEST(CudaFusedNormTest, MatchesTheCpuReferenceOnFourGpus) {
  REQUIRE_GPUS(4);
  ExpectAllOk(RunWorkers(4, UniqueSessionId(), FusedSums));
}

}  // namespace
}  // namespace vdev
