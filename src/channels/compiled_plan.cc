// Compiled plans (internal/compiled_plan.h): the source of a rank's kernel for one shape, its NVRTC
// compilation and the kernels loaded per shape.
#include "internal/compiled_plan.h"
#include "internal/nvrtc_loader.h"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "cuda_common/cuda_common.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels::internal {

// The plan kernel's headers as NVRTC sees them (generated from the sources by
// cmake/VdevEmbedHeaders.cmake): the names they are included by, and their text.
struct EmbeddedHeader {
  const char* name;
  const char* text;
};
extern const EmbeddedHeader kPlanKernelHeaders[];
extern const int kNumPlanKernelHeaders;

namespace {

using vdev::internal::CudaStatus;

constexpr const char* kKernelName = "vdev_compiled_plan";

// What the embedded headers include from the C++ library and the CUDA runtime, for NVRTC, which
// has neither (the toolkit's own fp16/bf16 headers come from its include directory).
constexpr const char* kFixedWidthIntegers = R"(#pragma once
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef unsigned long uintptr_t;
)";

// Statements that make `name` device op `d` resolved for the block's instance (a variable of the
// kernel), as ResolveOp resolves it, for this count: offsets into the launch's regions and
// semaphores as constants, the instance's part of the op's chunks by PartOf with constant sizes
// (multiplications, no division).
std::string DeclareOp(const std::string& name, const DeviceOp& d, const PlanLaunchArgs& a) {
  std::string s = absl::StrCat("ResolvedOp<S> ", name, "{};");
  auto field = [&](absl::string_view f, auto v) { absl::StrAppend(&s, " ", name, ".", f, " = ", v, ";"); };
  field("kind", static_cast<int>(d.kind));
  field("sync", static_cast<int>(d.sync));
  field("relaxed", static_cast<int>(d.relaxed));
  field("nsrcs", static_cast<int>(d.nsrcs));
  field("batch", static_cast<int>(d.batch));
  field("port", static_cast<int>(d.port));
  field("then_reduce", static_cast<int>(d.then_reduce));
  field("then_wait", static_cast<int>(d.then_wait));
  field("packets", static_cast<unsigned>(d.packets));
  field("peer", static_cast<int>(d.peer));
  field("scratch", static_cast<unsigned>(d.scratch));
  field("k", absl::StrCat(d.k, "u"));
  field("per_call", absl::StrCat(d.per_call, "u"));
  // Instance 0's semaphore word, as an offset into its rank's words; instance i's is i *
  // kMaxWorkers words on (ResolveOp's tag).
  const ResolvedOp<kMaxReduceSources> first = ResolveOp<kMaxReduceSources>(a, 0, d);
  if (first.word != nullptr) {
    const int owner = d.kind == kDevSignal ? d.peer : a.rank;
    field("word", absl::StrCat("a.semaphores[", owner, "] + ", first.word - a.semaphores[owner], " + instance * ",
                               kMaxWorkers));
  }
  if (d.nsrcs > 0) {
    const Range whole = ChunkBytes(a.count, a.chunks_per_segment, d.dst.index, d.dst.count, a.elem);
    absl::StrAppend(&s, " const Range ", name, "_part = PartOf(", whole.size(), "ull, ", d.part * a.instances,
                    " + instance, ", d.parts * a.instances, ");");
    field("bytes", absl::StrCat(name, "_part.size()"));
    auto at = [&](const DeviceRef& c) {
      return absl::StrCat("a.regions[", static_cast<int>(c.rank), "] + ", At(a, c) - a.regions[c.rank], " + ",
                          c.packets ? "2 * " : "", name, "_part.begin");
    };
    field("dst", at(d.dst));
    for (int j = 0; j < d.nsrcs; ++j) field(absl::StrCat("src[", j, "]"), at(d.srcs[j]));
  }
  return s + "\n";
}

std::string OpName(int i) { return absl::StrCat("o", i); }

// `ops[first, first + n)` as an array named `name`.
std::string OpArray(const std::string& name, int first, int n) {
  std::string s = absl::StrCat("const ResolvedOp<S> ", name, "[] = {");
  for (int j = 0; j < n; ++j) absl::StrAppend(&s, j ? ", " : "", OpName(first + j));
  return s + "};";
}

// One thread per op of ops[first, first + n) runs its signal or wait (RunSync). Thread t picks its
// op's fields by selects and all run one RunSync: a branch per thread would serialise the polls of
// a warp's threads (each thread's wait its own loop), as the generic kernel's shared-memory index
// does not.
std::string SyncRun(int first, int n) {
  std::string s = absl::StrCat("if (t < ", n, ") { ResolvedOp<S> sync = ", OpName(first), ";");
  for (int j = 1; j < n; ++j) absl::StrAppend(&s, " if (t == ", j, ") sync = ", OpName(first + j), ";");
  return absl::StrCat(s, " RunSync<S>(b, sync, call, ", first, " + t); }");
}

// The steps of ops [first, last) of the plan, as the generic kernel's step loop runs them
// (cuda_executor.cu), for one instance of their thread block.
std::string Steps(const FlatPlan& flat, int first, int last, const PlanLaunchArgs& a) {
  std::string s;
  const std::vector<DeviceOp>& ops = flat.ops;
  for (int i = first; i < last; ++i) s += DeclareOp(OpName(i - first), ops[i], a);
  for (int i = first; i < last;) {
    const DeviceOp& op = ops[i];
    const int at = i - first, n = op.batch;
    const int m = op.then_wait ? ops[i + n].batch : 0;
    const int step = n + op.then_reduce + m;
    absl::StrAppend(&s, "b.op = ", at, ";\n");
    if (op.sync & kDevSyncBefore) s += "b.Sync();\n";
    s += "if (!b.gave_up) {\n";
    if (op.kind == kDevSignal || op.kind == kDevWait) {
      s += SyncRun(at, n) + "\n";
      if (m > 0) s += "if (!b.gave_up) " + SyncRun(at + n, m) + "\n";
    } else if (op.then_reduce) {
      absl::StrAppend(&s, "b.op = ", at + n, ";\n", OpArray("run", at, n + 1), "\n",
                      "RunPacketsThenReduce<S, T>(b, run, ", n, ", shift);\n");
    } else if (n > 1) {
      absl::StrAppend(&s, OpArray("run", at, n), "\nRunFusedPuts<S>(b, run, ", n, ", shift);\n");
    } else {
      absl::StrAppend(&s, "RunOp<S, T>(b, ", OpName(at), ", shift);\n");
    }
    s += "}\n";
    if (ops[i + step - 1].sync & kDevSyncAfter) s += "b.Sync();\n";
    i += step;
  }
  return s;
}

// One case per thread block: its instances share the code (a block's instance is a variable).
std::string ThreadBlocks(const FlatPlan& flat, const PlanLaunchArgs& a) {
  std::string s;
  for (int tb = 0; tb + 1 < static_cast<int>(flat.tb_begin.size()); ++tb) {
    absl::StrAppend(&s, "case ", tb, ": {\n", Steps(flat, flat.tb_begin[tb], flat.tb_begin[tb + 1], a), "break;\n}\n");
  }
  return s;
}

absl::string_view ElementType(int dtype) {
  switch (dtype) {
    case kDevF16: return "__half";
    case kDevBF16: return "__nv_bfloat16";
    default: return "float";
  }
}

std::string ToolkitInclude() {
  for (const char* env : {"VDEV_NVRTC_INCLUDE", "CUDA_HOME", "CUDA_PATH"}) {
    const char* v = std::getenv(env);
    if (v == nullptr || *v == 0) continue;
    const std::filesystem::path p =
        absl::string_view(env) == "VDEV_NVRTC_INCLUDE" ? v : std::filesystem::path(v) / "include";
    if (std::filesystem::exists(p / "cuda_fp16.h")) return p.string();
  }
  return VDEV_CUDA_INCLUDE_DIR;
}

std::string ProgramLog(nvrtcProgram program) {
  size_t size = 0;
  nvrtcGetProgramLogSize(program, &size);
  std::string log(size, '\0');
  nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// The current device's compute capability as NVRTC names it (90 for sm_90).
absl::StatusOr<int> CurrentDeviceArch() {
  int device = 0, major = 0, minor = 0;
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  VDEV_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute"));
  VDEV_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute"));
  return 10 * major + minor;
}

absl::Status Nvrtc(nvrtcResult r, absl::string_view what) {
  if (r == NVRTC_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", nvrtcGetErrorString(r)));
}

}  // namespace

absl::StatusOr<std::string> CompiledPlanSource(const FlatPlan& flat, const PlanLaunchArgs& a) {
  if (flat.uses_ports) return absl::UnimplementedError("plans with port channels run on the generic kernel");
  if (a.instances < 1 || PlanBlocks(a) > kMaxPlanBlocks) {
    return absl::InvalidArgumentError(absl::StrCat(PlanBlocks(a), " blocks: a launch takes 1..", kMaxPlanBlocks));
  }
  std::string s = absl::StrCat(
      "// A compiled channel plan (src/channels/internal/compiled_plan.h): rank ", a.rank, ", ", a.count,
      " elements of ", ElementType(a.dtype), " a segment, ", a.instances, " instances.\n",
      "#include \"internal/cuda_plan_steps.cuh\"\n\n", "using namespace vdev::channels::internal;\n",
      "extern \"C\" __global__ void __launch_bounds__(", PlanThreads(a), ", 1) ", kKernelName,
      "(const __grid_constant__ PlanLaunchArgs a) {\n", "constexpr int S = ", KernelSources(flat.max_srcs),
      ";\nusing T = ", ElementType(a.dtype), ";\n", "__shared__ int failed_s;\n",
      "if (threadIdx.x == 0) failed_s = 0;\n__syncthreads();\n", "vdev::internal::FollowPreviousGrid();\n",
      "const uint64_t call = a.counters[blockIdx.x] + 1;\n", "Block b{a, PacketFlag(call), 0, 0, 0, &failed_s};\n",
      "const uint64_t shift = (call & 1) ? a.layout.scratch[1] - a.layout.scratch[0] : 0;\n",
      "const int t = static_cast<int>(threadIdx.x);\n(void)t;\n",
      "const int instance = static_cast<int>(blockIdx.x) % ", a.instances, ";\n",
      "b.tb = static_cast<int>(blockIdx.x) / ", a.instances, ";\n", "switch (b.tb) {\n", ThreadBlocks(flat, a));
  absl::StrAppend(&s, "default: break;\n}\n",
                  "if (a.num_spares > 0 && SweepsPackets(call)) SweepStalePackets(a, call);\n",
                  "AdvanceEpochCounters(a, call);\n}\n");
  return s;
}

absl::StatusOr<std::string> CompilePlanCubin(const std::string& source, int arch) {
  VDEV_RETURN_IF_ERROR(LoadNvrtc());
  std::vector<const char*> names = {"cstdint", "cstddef", "cuda_runtime.h", "vdev/runtime/peer_group.h"};
  const std::string session =
      absl::StrCat("#pragma once\nnamespace vdev { inline constexpr int kMaxWorkers = ", kMaxWorkers, "; }\n");
  std::vector<const char*> texts = {kFixedWidthIntegers, "#pragma once\n", "#pragma once\n", session.c_str()};
  for (int i = 0; i < kNumPlanKernelHeaders; ++i) {
    names.push_back(kPlanKernelHeaders[i].name);
    texts.push_back(kPlanKernelHeaders[i].text);
  }
  nvrtcProgram program;
  VDEV_RETURN_IF_ERROR(Nvrtc(nvrtcCreateProgram(&program, source.c_str(), "compiled_plan.cu",
                                                static_cast<int>(names.size()), texts.data(), names.data()),
                             "nvrtcCreateProgram"));
  const std::string gpu = absl::StrCat("--gpu-architecture=sm_", arch);
  const std::string include = absl::StrCat("-I", ToolkitInclude());
  // VDEV_NVRTC_VERBOSE: ptxas's register and spill report of every compiled plan, on stderr.
  const bool verbose = std::getenv("VDEV_NVRTC_VERBOSE") != nullptr;
  std::vector<const char*> options = {gpu.c_str(), include.c_str(), "-std=c++17", "-DNDEBUG"};
  if (verbose) options.push_back("--ptxas-options=-v");
  // VDEV_NVRTC_OPTIONS: more options, space-separated (experiments: -maxrregcount=64, -D...).
  std::vector<std::string> extra;
  if (const char* more = std::getenv("VDEV_NVRTC_OPTIONS"); more != nullptr) {
    extra = absl::StrSplit(more, ' ', absl::SkipEmpty());
  }
  for (const std::string& o : extra) options.push_back(o.c_str());
  const nvrtcResult compiled = nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  std::string out;
  absl::Status status = absl::OkStatus();
  if (compiled != NVRTC_SUCCESS) {
    status = absl::InternalError(absl::StrCat("NVRTC could not compile a plan (", nvrtcGetErrorString(compiled),
                                              "): ", ProgramLog(program).substr(0, 4096)));
  } else {
    if (verbose) std::fprintf(stderr, "%s", ProgramLog(program).c_str());
    size_t size = 0;
    status = Nvrtc(nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
    if (status.ok()) {
      out.resize(size);
      status = Nvrtc(nvrtcGetCUBIN(program, out.data()), "nvrtcGetCUBIN");
    }
  }
  nvrtcDestroyProgram(&program);
  if (!status.ok()) return status;
  return out;
}

absl::Status ProbePlanCompiler(int arch) {
  return CompilePlanCubin(absl::StrCat("#include \"internal/cuda_plan_steps.cuh\"\nextern \"C\" __global__ void ",
                                       kKernelName, "() {}\n"),
                          arch)
      .status();
}

absl::Status PlanCompilerWorks() {
  static const absl::Status* const works = [] {
    const absl::StatusOr<int> arch = CurrentDeviceArch();
    return new absl::Status(arch.ok() ? ProbePlanCompiler(*arch) : arch.status());
  }();
  return *works;
}

absl::StatusOr<std::unique_ptr<CompiledPlan>> CompiledPlan::Create(FlatPlan flat, int rank, int chunks_per_segment) {
  if (flat.uses_ports) return absl::UnimplementedError("plans with port channels run on the generic kernel");
  return std::unique_ptr<CompiledPlan>(new CompiledPlan(std::move(flat), rank, chunks_per_segment));
}

CompiledPlan::~CompiledPlan() {
  for (auto& [shape, kernel] : kernels_) cudaLibraryUnload(kernel.first);
}

absl::Status CompiledPlan::Bind(const PlanLaunchArgs& a) {
  if (a.rank != rank_ || a.chunks_per_segment != chunks_per_segment_) {
    return absl::InvalidArgumentError(absl::StrCat("a compiled plan of rank ", rank_, " (", chunks_per_segment_,
                                                   " chunks a segment) launched for rank ", a.rank, " (",
                                                   a.chunks_per_segment, ")"));
  }
  if (arch_ != 0) return absl::OkStatus();
  VDEV_ASSIGN_OR_RETURN(arch_, CurrentDeviceArch());
  return absl::OkStatus();
}

absl::Status CompiledPlan::Load(const PlanLaunchArgs& a, const std::string& cubin) {
  cudaLibrary_t library = nullptr;
  VDEV_RETURN_IF_ERROR(CudaStatus(cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
                                  "cudaLibraryLoadData"));
  cudaKernel_t kernel = nullptr;
  // Loaded into the device's context now, not at its first launch: CUDA loads a kernel lazily, and
  // a load waits for the kernels running in the context — a peer rank's plan polling for this one.
  cudaFuncAttributes attributes;
  absl::Status s = CudaStatus(cudaLibraryGetKernel(&kernel, library, kKernelName), "cudaLibraryGetKernel");
  if (s.ok())
    s = CudaStatus(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)), "cudaFuncGetAttributes");
  if (!s.ok()) {
    cudaLibraryUnload(library);
    return s;
  }
  kernels_.emplace(ShapeOf(a), std::make_pair(library, kernel));
  return absl::OkStatus();
}

absl::StatusOr<const void*> CompiledPlan::Kernel(const PlanLaunchArgs& a) {
  auto it = kernels_.find(ShapeOf(a));
  if (it == kernels_.end()) {
    VDEV_RETURN_IF_ERROR(Prepare({a}));
    it = kernels_.find(ShapeOf(a));
  } else {
    VDEV_RETURN_IF_ERROR(Bind(a));
  }
  return reinterpret_cast<const void*>(it->second.second);
}

absl::Status CompiledPlan::Prepare(const std::vector<PlanLaunchArgs>& launches) {
  std::vector<PlanLaunchArgs> todo;
  absl::flat_hash_set<Shape> seen;
  for (const PlanLaunchArgs& a : launches) {
    VDEV_RETURN_IF_ERROR(Bind(a));
    if (!kernels_.contains(ShapeOf(a)) && seen.insert(ShapeOf(a)).second) todo.push_back(a);
  }
  std::vector<absl::StatusOr<std::string>> cubins(todo.size(), absl::UnknownError("not compiled"));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < todo.size(); i = next++) {
      absl::StatusOr<std::string> source = CompiledPlanSource(flat_, todo[i]);
      cubins[i] = source.ok() ? CompilePlanCubin(*source, arch_) : source.status();
    }
  };
  std::vector<std::thread> threads;
  const size_t n = std::min<size_t>(todo.size(), std::max(1u, std::thread::hardware_concurrency()));
  for (size_t i = 1; i < n; ++i) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < todo.size(); ++i) {
    if (!cubins[i].ok()) return cubins[i].status();
    VDEV_RETURN_IF_ERROR(Load(todo[i], *cubins[i]));
  }
  return absl::OkStatus();
}

}  // namespace vdev::channels::internal
