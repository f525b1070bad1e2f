// libFuzzer target: PlanDevices on whatever the parser and verifier accept.
//
// The first byte chooses the options (bit 0: --strict; bit 1: --default cpu:0; bit 2: --host
// cuda:1); the rest is IR text. Besides "no crash, no leak, no undefined behaviour, no hang" it
// checks what planning promises: a failure is InvalidArgument with a message (a conflict's
// annotations located), never an internal error; a plan is a module that verifies, whose report
// writes, and whose printed text parses, verifies and plans again.
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "vdev/ir/ir_text.h"
#include "vdev/planner/plan_devices.h"

using vdev::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  vdev::PlanOptions options;
  options.strict = (data[0] & 1) != 0;
  if (data[0] & 2) options.default_device = *vdev::ParseVirtualDevice("cpu:0");
  if (data[0] & 4) options.host_device = *vdev::ParseVirtualDevice("cuda:1");
  absl::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  absl::StatusOr<vdev::ir::Module> module = vdev::ir::ParseModule(text);
  if (!module.ok() || !vdev::ir::VerifyModule(*module).ok()) return 0;
  vdev::PlanError error;
  absl::StatusOr<vdev::PlanResult> plan = vdev::PlanDevices(*module, options, &error);
  if (!plan.ok()) {
    Check(absl::IsInvalidArgument(plan.status()));
    Check(!error.message.empty());
    for (const vdev::ConflictAnnotation& c : error.conflicts) Check(c.loc.valid());
    (void)vdev::PlanErrorJson(error);
    return 0;
  }
  Check(vdev::ir::VerifyModule(plan->module).ok());
  (void)vdev::PlanReportJson(*plan);
  std::string printed = vdev::ir::PrintModule(plan->module);
  absl::StatusOr<vdev::ir::Module> again = vdev::ir::ParseModule(printed);
  Check(again.ok());
  Check(vdev::ir::VerifyModule(*again).ok());
  Check(vdev::PlanDevices(*std::move(again), options).ok());
  return 0;
}
