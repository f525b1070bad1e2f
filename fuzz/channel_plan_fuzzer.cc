// Execution plans as JSON (vdev/channels/channel_plan.h), the files `CudaPlanExecutor` and the host executor
// load: whatever the text, loading either fails with InvalidArgument naming the file, or gives a
// program the validator accepts whose JSON loads back equal and prints identically.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "fuzz/fuzz_check.h"
#include "vdev/channels/channel_plan.h"
#include "vdev/channels/channel_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using vdev::fuzz::Check;
  namespace channels = vdev::channels;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<channels::ProgramSpec> plan = channels::PlanFromJson(text, "fuzz.json");
  if (!plan.ok()) {
    Check(plan.status().code() == absl::StatusCode::kInvalidArgument);
    Check(absl::StartsWith(plan.status().message(), "fuzz.json"));
    return 0;
  }
  Check(channels::ValidateProgram(*plan).ok());
  const std::string json = channels::PlanToJson(*plan);
  absl::StatusOr<channels::ProgramSpec> again = channels::PlanFromJson(json, "again.json");
  Check(again.ok() && *again == *plan && channels::PlanToJson(*again) == json);
  return 0;
}
