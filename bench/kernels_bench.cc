// The CPU kernels on the shapes of examples/memory/tp_transformer_10.vdev (one worker of 4: hidden
// 4096, 256 tokens, 8 heads of 128, f16), each against a peer in the same process:
//   matmul (f32, f16, bf16) against cblas_sgemm alone on f32 operands of the same shape: what
//     widening f16/bf16 panels and rounding the output cost on top of BLAS;
//   attention against the two sgemm calls per head it is made of (Q K^T and P V, full T x T);
//   one transformer layer (rms_norm, 4 matmuls, attention, silu_mul, 2 adds; the all-reduces are the
//     runtime's) against its four matmuls as bare sgemm: the share the non-BLAS kernels add.
// Run: build/bench/kernels_bench --benchmark_min_time=1 (threads: the benchmark's argument).
#include <cblas.h>

#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "vdev/kernels/kernels.h"
#include "vdev/support/half.h"

namespace vdev {
namespace {

constexpr int64_t kTokens = 256, kHidden = 4096, kHeads = 8, kHeadDim = 128, kQkv = 3 * kHeads * kHeadDim;
constexpr int64_t kFfn2 = 5504, kFfn = kFfn2 / 2, kAttn = kHeads * kHeadDim;

HostTensor Random(ir::DType dtype, Shape shape, uint32_t seed, float scale) {
  HostTensor t = HostTensor::Zeros(dtype, std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    const float v = dist(gen);
    if (dtype == ir::DType::kF32) reinterpret_cast<float*>(t.bytes.data())[i] = v;
    else if (dtype == ir::DType::kF16) reinterpret_cast<uint16_t*>(t.bytes.data())[i] = FloatToHalf(v);
    else reinterpret_cast<uint16_t*>(t.bytes.data())[i] = FloatToBF16(v);
  }
  return t;
}

void Call(const char* op, std::initializer_list<const HostTensor*> in, HostTensor& out, const KernelAttrs& attrs,
          benchmark::State& state) {
  std::vector<TensorRef> inputs;
  for (const HostTensor* t : in) inputs.push_back(t->Ref());
  TensorRef output = out.Ref();
  KernelContext context;
  KernelCall call{.inputs = inputs, .outputs = absl::MakeConstSpan(&output, 1), .attrs = &attrs, .context = &context};
  absl::Status s = KernelRegistry::Global().Find(op, DeviceType::kCPU)(call);
  if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
}

void Sgemm(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c, int64_t m, int64_t k,
           int64_t n) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
}

void SetFlops(benchmark::State& state, double flops) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// The qkv projection: [256,4096] x [4096,3072].
void BM_MatmulKernel(benchmark::State& state, ir::DType dtype) {
  SetCpuKernelThreads(static_cast<int>(state.range(0)));
  HostTensor a = Random(dtype, {kTokens, kHidden}, 1, 1), b = Random(dtype, {kHidden, kQkv}, 2, 0.02f);
  HostTensor out = HostTensor::Zeros(dtype, {kTokens, kQkv});
  for (auto _ : state) Call("matmul", {&a, &b}, out, KernelAttrs(), state);
  SetFlops(state, 2.0 * kTokens * kHidden * kQkv);
}
BENCHMARK_CAPTURE(BM_MatmulKernel, f32, ir::DType::kF32)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulKernel, f16, ir::DType::kF16)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulKernel, bf16, ir::DType::kBF16)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_SgemmPeer(benchmark::State& state) {
  SetCpuKernelThreads(static_cast<int>(state.range(0)));
  std::vector<float> a(kTokens * kHidden, 0.5f), b(kHidden * kQkv, 0.01f), c(kTokens * kQkv);
  for (auto _ : state) Sgemm(a, b, c, kTokens, kHidden, kQkv);
  SetFlops(state, 2.0 * kTokens * kHidden * kQkv);
}
BENCHMARK(BM_SgemmPeer)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// Causal attention over qkv[256,3,8,128] in f16.
void BM_AttentionKernel(benchmark::State& state) {
  SetCpuKernelThreads(static_cast<int>(state.range(0)));
  HostTensor qkv = Random(ir::DType::kF16, {kTokens, 3, kHeads, kHeadDim}, 3, 1);
  HostTensor out = HostTensor::Zeros(ir::DType::kF16, {kTokens, kHeads, kHeadDim});
  KernelAttrs attrs;
  attrs.Set("causal", true);
  for (auto _ : state) Call("attention", {&qkv}, out, attrs, state);
}
BENCHMARK(BM_AttentionKernel)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// Its sgemm calls at full T x T per head, on f32 data already laid out per head.
void BM_AttentionSgemmPeer(benchmark::State& state) {
  SetCpuKernelThreads(static_cast<int>(state.range(0)));
  std::vector<float> q(kTokens * kHeadDim, 0.1f), s(kTokens * kTokens), o(kTokens * kHeadDim);
  for (auto _ : state) {
    for (int64_t h = 0; h < kHeads; ++h) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kTokens, kTokens, kHeadDim, 1.0f, q.data(), kHeadDim,
                  q.data(), kHeadDim, 0.0f, s.data(), kTokens);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kTokens, kHeadDim, kTokens, 1.0f, s.data(), kTokens,
                  q.data(), kHeadDim, 0.0f, o.data(), kHeadDim);
    }
  }
}
BENCHMARK(BM_AttentionSgemmPeer)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// One layer of the example, f16, without its all-reduces.
void BM_LayerKernels(benchmark::State& state) {
  SetCpuKernelThreads(static_cast<int>(state.range(0)));
  const ir::DType f16 = ir::DType::kF16;
  HostTensor x = Random(f16, {kTokens, kHidden}, 4, 1), g1 = Random(f16, {kHidden}, 5, 1),
             g2 = Random(f16, {kHidden}, 6, 1), wqkv = Random(f16, {kHidden, kQkv}, 7, 0.02f),
             wo = Random(f16, {kAttn, kHidden}, 8, 0.02f), wgu = Random(f16, {kHidden, kFfn2}, 9, 0.02f),
             wd = Random(f16, {kFfn, kHidden}, 10, 0.02f);
  HostTensor n1 = HostTensor::Zeros(f16, {kTokens, kHidden}),
             qkv = HostTensor::Zeros(f16, {kTokens, 3, kHeads, kHeadDim});
  HostTensor att = HostTensor::Zeros(f16, {kTokens, kAttn}), o = n1, h1 = n1, n2 = n1, down = n1, h2 = n1;
  HostTensor gu = HostTensor::Zeros(f16, {kTokens, kFfn2}), act = HostTensor::Zeros(f16, {kTokens, kFfn});
  KernelAttrs none, causal;
  causal.Set("causal", true);
  for (auto _ : state) {
    Call("rms_norm", {&x, &g1}, n1, none, state);
    qkv.shape = {kTokens, kQkv};  // reshape: a view
    Call("matmul", {&n1, &wqkv}, qkv, none, state);
    qkv.shape = {kTokens, 3, kHeads, kHeadDim};
    att.shape = {kTokens, kHeads, kHeadDim};
    Call("attention", {&qkv}, att, causal, state);
    att.shape = {kTokens, kAttn};
    Call("matmul", {&att, &wo}, o, none, state);
    Call("add", {&x, &o}, h1, none, state);
    Call("rms_norm", {&h1, &g2}, n2, none, state);
    Call("matmul", {&n2, &wgu}, gu, none, state);
    Call("silu_mul", {&gu}, act, none, state);
    Call("matmul", {&act, &wd}, down, none, state);
    Call("add", {&h1, &down}, h2, none, state);
  }
  SetFlops(state, 2.0 * kTokens * (kHidden * kQkv + kAttn * kHidden + kHidden * kFfn2 + kFfn * kHidden));
}
BENCHMARK(BM_LayerKernels)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_LayerSgemmPeer(benchmark::State& state) {
  SetCpuKernelThreads(static_cast<int>(state.range(0)));
  std::vector<float> x(kTokens * kFfn2, 0.5f), w(kHidden * kFfn2, 0.01f), out(kTokens * kFfn2);
  for (auto _ : state) {
    Sgemm(x, w, out, kTokens, kHidden, kQkv);
    Sgemm(x, w, out, kTokens, kAttn, kHidden);
    Sgemm(x, w, out, kTokens, kHidden, kFfn2);
    Sgemm(x, w, out, kTokens, kFfn, kHidden);
  }
  SetFlops(state, 2.0 * kTokens * (kHidden * kQkv + kAttn * kHidden + kHidden * kFfn2 + kFfn * kHidden));
}
BENCHMARK(BM_LayerSgemmPeer)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vdev

BENCHMARK_MAIN();
