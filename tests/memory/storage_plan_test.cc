// Tests of the best-fit storage planner over abstract live ranges (vdev/memory/storage_plan.h).
#include "vdev/memory/storage_plan.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidcheck/gtest.h"

namespace vdev {
namespace {

const PoolKey kGpuGlobal{{DeviceType::kCUDA, 0}, "global"};
const PoolKey kGpuIpc{{DeviceType::kCUDA, 0}, "ipc_memory"};
const PoolKey kGpu1Global{{DeviceType::kCUDA, 1}, "global"};

TensorLifetime T(int64_t bytes, const PoolKey& pool, int def, int last, bool reusable = true) {
  return TensorLifetime{bytes, pool, def, last, reusable};
}

// Plans `tensors` into `plan`, a fatal failure (not a crash) when planning fails; callers wrap it
// in ASSERT_NO_FATAL_FAILURE.
void PlanOk(StoragePlan& plan, const std::vector<TensorLifetime>& tensors, StoragePlanOptions options = {}) {
  absl::StatusOr<StoragePlan> planned = PlanStorage(tensors, options);
  ASSERT_TRUE(planned.ok()) << planned.status();
  absl::Status verified = VerifyStoragePlan(tensors, *planned, options);
  EXPECT_TRUE(verified.ok()) << verified;
  plan = *std::move(planned);
}

TEST(StoragePlanTest, DisjointLifetimesInOnePoolShareStorage) {
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(plan, {T(400, kGpuGlobal, 0, 1), T(400, kGpuGlobal, 2, 3)}));
  EXPECT_EQ(plan.storage_of[0], plan.storage_of[1]);
  EXPECT_EQ(plan.storages.size(), 1u);
  EXPECT_EQ(plan.PoolBytes(kGpuGlobal), 400);
}

TEST(StoragePlanTest, OverlappingLifetimesDoNotShare) {
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(plan, {T(400, kGpuGlobal, 0, 2), T(400, kGpuGlobal, 1, 3)}));
  EXPECT_NE(plan.storage_of[0], plan.storage_of[1]);
}

TEST(StoragePlanTest, OperandAndResultOfOneBindingDoNotShare) {
  // Tensor 0 is last used by binding 1, which defines tensor 1: the op reads one while writing the other.
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(plan, {T(400, kGpuGlobal, 0, 1), T(400, kGpuGlobal, 1, 2)}));
  EXPECT_NE(plan.storage_of[0], plan.storage_of[1]);
}

TEST(StoragePlanTest, DisjointLifetimesInDifferentScopesNeverShare) {
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(plan, {T(400, kGpuGlobal, 0, 1), T(400, kGpuIpc, 2, 3), T(400, kGpuGlobal, 4, 5)}));
  EXPECT_NE(plan.storage_of[0], plan.storage_of[1]);
  EXPECT_EQ(plan.storage_of[0], plan.storage_of[2]);
  EXPECT_EQ(plan.storages[plan.storage_of[1]].pool, kGpuIpc);
  EXPECT_EQ(plan.PoolBytes(kGpuGlobal), 400);
  EXPECT_EQ(plan.PoolBytes(kGpuIpc), 400);
}

TEST(StoragePlanTest, DisjointLifetimesOnDifferentDevicesNeverShare) {
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(plan, {T(400, kGpuGlobal, 0, 1), T(400, kGpu1Global, 2, 3)}));
  EXPECT_NE(plan.storage_of[0], plan.storage_of[1]);
}

TEST(StoragePlanTest, ParametersAndResultsAreNotReused) {
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(plan, {T(400, kGpuGlobal, 0, 0, /*reusable=*/false), T(400, kGpuGlobal, 1, 2),
                                        T(400, kGpuGlobal, 3, 3, /*reusable=*/false)}));
  EXPECT_EQ(plan.storages.size(), 3u);
}

TEST(StoragePlanTest, BestFitTakesTheSmallestLargeEnoughStorage) {
  // Storages of 1000, 300 and 600 bytes fall free; a 500-byte tensor takes the 600-byte one.
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(
      plan, {T(1000, kGpuGlobal, 0, 1), T(300, kGpuGlobal, 0, 1), T(600, kGpuGlobal, 0, 1), T(500, kGpuGlobal, 2, 3)}));
  EXPECT_EQ(plan.storage_of[3], plan.storage_of[2]);
  EXPECT_EQ(plan.storages[plan.storage_of[2]].bytes, 600);
}

TEST(StoragePlanTest, WithoutAFitTheLargestFreeStorageGrows) {
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(plan, {T(100, kGpuGlobal, 0, 1), T(300, kGpuGlobal, 0, 1), T(500, kGpuGlobal, 2, 3)}));
  EXPECT_EQ(plan.storage_of[2], plan.storage_of[1]);
  EXPECT_EQ(plan.storages[plan.storage_of[1]].bytes, 500);
  EXPECT_EQ(plan.storages.size(), 2u);
}

TEST(StoragePlanTest, HandCheckedPoolSizes) {
  // global: A(1000) [0,2], B(200) [1,3], C(900) [3,5] reuses A, D(100) [4,6] reuses B, E(50) param.
  // ipc: F(700) [2,4], G(700) [5,6] reuses F.
  std::vector<TensorLifetime> tensors = {
      T(50, kGpuGlobal, 0, 6, false), T(1000, kGpuGlobal, 0, 2), T(200, kGpuGlobal, 1, 3), T(700, kGpuIpc, 2, 4),
      T(900, kGpuGlobal, 3, 5),       T(100, kGpuGlobal, 4, 6),  T(700, kGpuIpc, 5, 6)};
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(plan, tensors, StoragePlanOptions{.alignment = 256}));
  // Storages in creation order: E(50) at 0, A(1000) at 256, B(200) at 1280 -> end 1480.
  const int64_t global_bytes = 256 + 1024 + 200;
  EXPECT_EQ(plan.PoolBytes(kGpuGlobal), global_bytes);
  EXPECT_EQ(plan.PoolBytes(kGpuIpc), 700);
  EXPECT_EQ(plan.storage_of[4], plan.storage_of[1]);
  EXPECT_EQ(plan.storage_of[5], plan.storage_of[2]);
  EXPECT_EQ(plan.storage_of[6], plan.storage_of[3]);
  EXPECT_EQ(plan.tensor_bytes, 50 + 1000 + 200 + 700 + 900 + 100 + 700);
  EXPECT_EQ(plan.pool_bytes, global_bytes + 700);
  EXPECT_EQ(plan.storages[plan.storage_of[2]].pool_offset, 1280);
}

TEST(StoragePlanTest, ZeroSizedTensorsArePlanned) {
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(plan, {T(0, kGpuGlobal, 0, 0), T(0, kGpuGlobal, 1, 1)}));
  EXPECT_EQ(plan.PoolBytes(kGpuGlobal), 0);
}

TEST(StoragePlanTest, RejectsBadInput) {
  EXPECT_EQ(PlanStorage(std::vector{T(-1, kGpuGlobal, 0, 0)}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanStorage(std::vector{T(1, kGpuGlobal, 3, 2)}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanStorage(std::vector{T(1, PoolKey{{DeviceType::kCUDA, 0}, ""}, 0, 0)}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanStorage(std::vector{T(1, kGpuGlobal, 0, 0)}, StoragePlanOptions{.alignment = 3}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(StoragePlanTest, VerifierCatchesSharedLiveStorage) {
  std::vector<TensorLifetime> tensors = {T(400, kGpuGlobal, 0, 2), T(400, kGpuGlobal, 1, 3)};
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(plan, tensors));
  plan.storage_of[1] = plan.storage_of[0];
  EXPECT_EQ(VerifyStoragePlan(tensors, plan).code(), absl::StatusCode::kInternal);
}

TEST(StoragePlanTest, LongChainNeedsTwoStorages) {
  // A 200,000-op chain: each value dies when the next is written, so two storages alternate.
  std::vector<TensorLifetime> tensors;
  for (int i = 0; i < 200000; ++i) tensors.push_back(T(4096, kGpuGlobal, i, i + 1));
  StoragePlan plan;
  ASSERT_NO_FATAL_FAILURE(PlanOk(plan, tensors));
  EXPECT_EQ(plan.storages.size(), 2u);
}

RC_GTEST_PROP(StoragePlanProperty, PlansAreValidAndDeterministic, ()) {
  const PoolKey pools[] = {kGpuGlobal, kGpuIpc, kGpu1Global};
  const int n = *rc::gen::inRange(0, 60);
  std::vector<TensorLifetime> tensors;
  for (int i = 0; i < n; ++i) {
    const int def = *rc::gen::inRange(0, 40);
    tensors.push_back(T(*rc::gen::inRange<int64_t>(0, 5000), pools[*rc::gen::inRange(0, 3)], def,
                        def + *rc::gen::inRange(0, 10), *rc::gen::inRange(0, 5) != 0));
  }
  absl::StatusOr<StoragePlan> a = PlanStorage(tensors);
  RC_ASSERT(a.ok());
  RC_ASSERT(VerifyStoragePlan(tensors, *a).ok());
  absl::StatusOr<StoragePlan> b = PlanStorage(tensors);
  RC_ASSERT(b.ok());
  RC_ASSERT(a->storage_of == b->storage_of);
  RC_ASSERT(a->pool_bytes == b->pool_bytes);
}

}  // namespace
}  // namespace vdev
