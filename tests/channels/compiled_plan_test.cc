// Compiled plans' sources (no GPU needed): every shipped plan without port channels, for every
// world 2..8, compiles with NVRTC for sm_90, in each element type; a port plan is refused. Whether
// they run exactly is cuda_one_gpu_plans_test.cc's (on a GPU).
#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "internal/compiled_plan.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/channels/cuda_channel_executor.h"

namespace vdev::channels::internal {
namespace {

// Launch arguments of `rank` with made-up regions and semaphores (nothing is launched).
PlanLaunchArgs FakeArgs(const ProgramSpec& plan, const FlatPlan& flat, int rank, uint64_t count, int instances,
                        int dtype) {
  PlanLaunchArgs a;
  a.rank = rank;
  a.count = count;
  a.instances = instances;
  a.dtype = dtype;
  a.elem = dtype == kDevF32 ? 4 : 2;
  a.chunks_per_segment = plan.chunks_per_segment;
  a.tbs = static_cast<int>(flat.tb_begin.size()) - 1;
  a.max_srcs = flat.max_srcs;
  a.num_spares = static_cast<int>(flat.spares.size());
  a.layout =
      MakeRegionLayout(count, a.elem, InputSegments(plan.collective, plan.world_size),
                       OutputSegments(plan.collective, plan.world_size), plan.chunks_per_segment, plan.scratch_chunks);
  for (int j = 0; j < plan.world_size; ++j) {
    a.regions[j] = reinterpret_cast<char*>(uintptr_t{0x7f0000000000} + (static_cast<uintptr_t>(j) << 32));
    a.semaphores[j] = reinterpret_cast<uint64_t*>(uintptr_t{0x7e0000000000} + (static_cast<uintptr_t>(j) << 24));
  }
  return a;
}

absl::Status CompileRank(const ProgramSpec& plan, int rank, uint64_t count, int instances, int dtype) {
  absl::StatusOr<FlatPlan> flat = FlattenPlan(plan, rank);
  if (!flat.ok()) return flat.status();
  absl::StatusOr<std::string> source = CompiledPlanSource(*flat, FakeArgs(plan, *flat, rank, count, instances, dtype));
  if (!source.ok()) return source.status();
  return CompilePlanCubin(*source, 90).status();
}

// The smallest world, an odd one and the largest: the generated code differs by world only in its
// unrolled peer lists and offsets, and each NVRTC compile takes seconds (every world 2-8 took minutes).
TEST(CompiledPlanTest, EveryShippedPlanCompilesForTheEdgeWorlds) {
  for (const std::string& name : ShippedPlanNames()) {
    for (int world : {2, 3, 8}) {
      const ProgramSpec plan = *ShippedPlan(name, world);
      if (!plan.port_channels.empty()) continue;
      const int rank = world - 1;  // not 0: a rank's own offsets and peers are in the code
      EXPECT_TRUE(CompileRank(plan, rank, 1001, 2, kDevF32).ok()) << name << " world " << world;
    }
  }
}

TEST(CompiledPlanTest, HalfTypesCompile) {
  for (const int dtype : {kDevF16, kDevBF16}) {
    const absl::Status s = CompileRank(*ShippedPlan("one_shot_ll", 4), 1, 4096, 4, dtype);
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(CompiledPlanTest, APortPlanIsLeftToTheGenericKernel) {
  const ProgramSpec plan = *ShippedPlan("all_gather_port", 2);
  const FlatPlan flat = *FlattenPlan(plan, 0);
  const absl::StatusOr<std::string> source = CompiledPlanSource(flat, FakeArgs(plan, flat, 0, 64, 1, kDevF32));
  EXPECT_EQ(source.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(CompiledPlan::Create(flat, 0, plan.chunks_per_segment).status().code(), absl::StatusCode::kUnimplemented);
}

TEST(CompiledPlanTest, TheProbeSaysWhetherNvrtcCompilesThePlanHeaders) {
  EXPECT_TRUE(ProbePlanCompiler(90).ok());
  setenv("VDEV_NVRTC_OPTIONS", "--no-such-nvrtc-option", 1);
  const absl::Status refused = ProbePlanCompiler(90);
  unsetenv("VDEV_NVRTC_OPTIONS");
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("NVRTC could not compile a plan"));
}

TEST(CompiledPlanTest, PlanKernelNames) {
  EXPECT_EQ(*PlanKernelFromName("generic"), PlanKernel::kGeneric);
  EXPECT_EQ(*PlanKernelFromName("compiled"), PlanKernel::kCompiled);
  EXPECT_EQ(*PlanKernelFromName("auto"), PlanKernel::kAuto);
  EXPECT_THAT(PlanKernelFromName("fast").status().message(),
              ::testing::HasSubstr("plan kernel 'fast': expected generic, compiled or auto"));
}

TEST(CompiledPlanTest, ACompileErrorCarriesNvrtcsLog) {
  const absl::StatusOr<std::string> cubin = CompilePlanCubin("this is not CUDA;", 90);
  ASSERT_FALSE(cubin.ok());
  EXPECT_THAT(cubin.status().message(), ::testing::HasSubstr("NVRTC could not compile a plan"));
  EXPECT_THAT(cubin.status().message(), ::testing::HasSubstr("compiled_plan.cu(1)"));
}

}  // namespace
}  // namespace vdev::channels::internal
