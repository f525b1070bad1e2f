// Execution plans: a channel program (vdev/channels/channel_program.h) as JSON, the form the executors load.
//
// The format (docs/channels.md) is one object: "format": "vdev.channels.plan/1", the program's
// name, collective, world_size, root, chunks_per_segment, scratch_chunks, memory_channels and
// port_channels ({"src", "dst", "tag"}), and "ranks": one entry per rank with its "thread_blocks",
// each a list of "ops" ({"op": "put", "channel": 0, "dst": {...}, "srcs": [{...}], "sync": ...},
// fields at their default value left out). Loading validates the program (ValidateProgram):
// a syntax error is reported as FILE:LINE:COL, a bad field by its path
// (`plan.json: ranks[1].thread_blocks[0].ops[2].sync: expected none, before, after or both`), a bad
// program by the validator's message.
//
// Example:
//   VDEV_ASSIGN_OR_RETURN(ProgramSpec plan, vdev::channels::LoadPlanFile("one_shot.json"));
//   std::string text = vdev::channels::PlanToJson(plan);   // loads back equal
#ifndef VDEV_CHANNEL_PLAN_H_
#define VDEV_CHANNEL_PLAN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/channels/channel_program.h"

namespace vdev::channels {

inline constexpr char kPlanFormat[] = "vdev.channels.plan/1";

// The plan as indented JSON (deterministic: equal programs give equal text).
std::string PlanToJson(const ProgramSpec& program);

// Parses and validates; `file` names the text in errors.
absl::StatusOr<ProgramSpec> PlanFromJson(absl::string_view text, absl::string_view file = "<plan>");
absl::StatusOr<ProgramSpec> LoadPlanFile(const std::string& path);

}  // namespace vdev::channels

#endif  // VDEV_CHANNEL_PLAN_H_
