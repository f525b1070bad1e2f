// Kernels: the implementations of ops that the executor calls, one per (op name, device type).
//
// A kernel reads its input tensors and writes its preallocated output tensors; it allocates no
// tensor memory of its own (the executor placed every output at its planned offset). Inputs and
// outputs are dense and row-major; an output never overlaps an input. f16 and bf16 kernels
// accumulate in f32 and round once on store. A 0-d input broadcasts like any other (a number
// operand such as `multiply(%x, 0.5)` reaches the kernel as a 0-d tensor of %x's dtype).
//
// The op set and its semantics (what CPU and CUDA kernels both implement; the type rules are in
// op_registry.h):
//   matmul(a[...,M,K], b[...,K,N]) -> [...,M,N]     batch dims broadcast
//   add, subtract, multiply, divide(a, b)            NumPy broadcasting
//   relu, gelu (erf form; approximate="tanh" for the tanh form), silu, exp, tanh, sigmoid,
//     negative, sqrt, rsqrt(x)
//   softmax / nn.softmax(x, axis=-1)
//   layer_norm(x, gamma, beta, epsilon=1e-5)         over the last axis
//   rms_norm(x, gamma, epsilon=1e-6)                 over the last axis: x / sqrt(mean(x^2)+eps) * gamma
//   transpose(x, axes=[...])                         default: reversed axes
//   concatenate / concat(a, b, ..., axis=0)
//   split(x, indices_or_sections=N|[i...], axis=0)   one output per part
//   cast(x, dtype=f16)                               f32/f16/bf16/i32/i64 between each other
//   take(table, indices, axis=0)                     embedding lookup; an index out of range is an error
//                                                    (CPU: a Status; CUDA: clamped and reported by CheckErrors)
//   attention(qkv[T,3,H,D], causal=false) -> [T,H,D] softmax(q k^T / sqrt(D)) v per head
//   silu_mul(x[...,2F]) -> [...,F]                   silu(x[..., :F]) * x[..., F:]
//   power, maximum, minimum(a, b)                    NumPy broadcasting (power: floats only)
//   log, erf, abs, reciprocal(x)
//   equal, not_equal, less, less_equal, greater, greater_equal(a, b) -> bool   NumPy broadcasting
//   where(cond, x, y)                                three-way NumPy broadcasting
//   broadcast_to(x, shape=[...]); strided_slice(x, begin=[...], end=[...], strides=[...])
//   sum, mean, max, min, prod(x, axis=[...], keepdims=)   no axis: all of them
//   log_softmax(x, axis=-1)
// Views (reshape), device_copy, allreduce, tuples and calls are the executor's, not kernels.
//
// Example (what the executor does for `%y = add(%a, %b, out=%t)`):
//   KernelFn add = KernelRegistry::Global().Find("add", DeviceType::kCPU);
//   TensorRef in[] = {a, b}, out[] = {t};
//   KernelCall call{.inputs = in, .outputs = out, .attrs = &attrs, .context = &cpu};
//   VDEV_RETURN_IF_ERROR(add(call));
#ifndef VDEV_KERNELS_H_
#define VDEV_KERNELS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "vdev/ir/ir.h"
#include "vdev/kernels/tensor.h"
#include "vdev/lattice/device_type.h"

namespace vdev {

// An attribute of an op call, decoded once when a program is loaded: integers, numbers, booleans,
// identifiers and strings (without quotes; a dtype such as `f16` is an identifier), integer lists.
using KernelAttr = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

class KernelAttrs {
 public:
  void Set(std::string key, KernelAttr value) { values_[std::move(key)] = std::move(value); }
  const KernelAttr* Find(absl::string_view key) const;
  // The value when present and of the asked kind (an integer also reads as a float), else `fallback`.
  int64_t IntOr(absl::string_view key, int64_t fallback) const;
  double FloatOr(absl::string_view key, double fallback) const;
  bool BoolOr(absl::string_view key, bool fallback) const;
  // A list, or a single integer as a one-element list.
  std::optional<std::vector<int64_t>> Ints(absl::string_view key) const;
  std::optional<std::string> Text(absl::string_view key) const;

 private:
  absl::flat_hash_map<std::string, KernelAttr> values_;
};

// Where a kernel runs. On a GPU: the device, the stream every kernel of the program is enqueued on
// (so the whole program can be captured as one CUDA graph), and the backend's library state.
struct KernelContext {
  DeviceType device_type = DeviceType::kCPU;
  int device_index = 0;     // the physical GPU
  void* stream = nullptr;   // cudaStream_t
  void* backend = nullptr;  // the CUDA kernels' state (cuBLASLt handle, workspace, error flag)
};

struct KernelCall {
  absl::Span<const TensorRef> inputs;
  absl::Span<const TensorRef> outputs;
  const KernelAttrs* attrs = nullptr;
  KernelContext* context = nullptr;
};

// InvalidArgument for what the type rules let through but the kernel cannot do (a dtype it lacks,
// an index out of range); the message names the op. Never throws.
using KernelFn = absl::Status (*)(const KernelCall& call);

class KernelRegistry {
 public:
  // Holds the CPU kernels from the start; the CUDA backend adds its kernels the first time it is
  // created (vdev/kernels/cuda_kernels.h). Thread-safe.
  static KernelRegistry& Global();

  // AlreadyExists when (op, device) has a kernel.
  absl::Status Register(absl::string_view op, DeviceType device, KernelFn fn);
  // nullptr when (op, device) has none.
  KernelFn Find(absl::string_view op, DeviceType device) const;
  // The ops with a kernel on `device`, sorted (for error messages).
  std::vector<std::string> Ops(DeviceType device) const;

 private:
  mutable absl::Mutex mutex_;
  absl::flat_hash_map<std::pair<std::string, DeviceType>, KernelFn> kernels_ ABSL_GUARDED_BY(mutex_);
};

// Adds the CPU kernels (src/kernels/cpu) to a registry; Global() calls it. They are the reference of
// `vdev run --check`, and where the op list above leaves a choice they do this:
//   - matmul and attention multiply through OpenBLAS sgemm (f16/bf16 widened to f32 panels);
//     softmax, layer_norm, rms_norm and attention's softmax sum their rows in double;
//   - gelu uses erfc and the logistic form of the tanh variant, accurate in the negative tail;
//     relu keeps a NaN;
//   - cast: float to integer truncates toward zero and saturates, NaN gives 0; an integer to f16 or
//     bf16 rounds once from its exact value; i64 to i32 wraps;
//   - take: indices must lie in [0, n) (a negative one is out of range);
//   - i32/i64 add, subtract and multiply wrap around;
//   - nn.relu has relu's kernel too (concat has concatenate's, nn.softmax softmax's).
void RegisterCpuKernels(KernelRegistry& registry);

// The threads the CPU kernels' BLAS (OpenBLAS) may use, at least 1. The executor sets
// cores / workers so that several worker processes on one host do not oversubscribe it.
//   SetCpuKernelThreads(std::max(1, cores / workers));
void SetCpuKernelThreads(int n);

}  // namespace vdev

#endif  // VDEV_KERNELS_H_
