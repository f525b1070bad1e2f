// libFuzzer target: the whole pipeline of compile.h (parse, verify, PlanDevices, types,
// LowerMemory with its check) on arbitrary IR text.
//
// The first byte chooses the options: bits 0–5 the storage alignment 2^k, k up to 62 (the size
// arithmetic at its limits: `vdev lower --alignment` accepts any power of two), bit 6 no IPC
// all-reduce rewrite, bit 7 strict planning. Besides "no crash, no leak, no undefined
// behaviour, no hang" it checks: a failure is the user's (InvalidArgument, located when the stage
// reads the text), never an internal error of a later stage rejecting an earlier one's output; a
// success has a memory plan whose report writes, sizes that are not negative, and a lowered text
// that parses and verifies.
#include <algorithm>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "vdev/compile/compile.h"
#include "vdev/ir/ir_text.h"
#include "vdev/memory/lower_memory.h"

using vdev::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  vdev::CompileOptions options;
  options.lower.storage.alignment = int64_t{1} << std::min(data[0] & 63, 62);
  options.lower.ipc_allreduce = (data[0] & 64) == 0;
  options.plan.strict = (data[0] & 128) != 0;
  absl::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  vdev::CompileError error;
  absl::StatusOr<vdev::CompileResult> compiled = vdev::Compile(text, options, &error);
  if (!compiled.ok()) {
    Check(absl::IsInvalidArgument(compiled.status()));
    bool reads_text = error.stage == vdev::CompileStage::kParse || error.stage == vdev::CompileStage::kVerify ||
                      error.stage == vdev::CompileStage::kPlan;
    if (reads_text) Check(error.diagnostic.loc.valid());
    return 0;
  }
  Check(compiled->memory.has_value());
  Check(compiled->memory->tensor_bytes >= 0 && compiled->memory->pool_bytes >= 0);
  for (const vdev::FunctionMemory& f : compiled->memory->functions) {
    for (const vdev::PoolSize& p : f.plan.pools) Check(p.bytes >= 0);
    for (const vdev::Storage& s : f.plan.storages) Check(s.bytes >= 0 && s.pool_offset >= 0);
  }
  (void)vdev::MemoryReportJson(compiled->module(), *compiled->memory);
  absl::StatusOr<vdev::ir::Module> again = vdev::ir::ParseModule(vdev::ir::PrintModule(compiled->module()));
  Check(again.ok());
  Check(vdev::ir::VerifyModule(*again).ok());
  return 0;
}
