// Memory capacity of a plan: which values are live at each program point, the peak of live bytes
// per machine device (the re-check of every optimised plan), and the capacity cut of one point
// (OptimizePlacement adds one for each point where a plan overflowed, then solves again).
//
// Program points: each top-level function is walked in post-order (a binding after its nested
// blocks); the k-th input binding of the walk is point 2k, and a binding the planner added (a copy)
// is the odd point after the input binding before it. A read by such a copy counts at the next even
// point (its consumer's). A value (a parameter, or a binding that makes storage: an op or kernel
// call, a call, a constant, a copy) is live from its point (parameters: 0) to its last read;
// tuples, projections, aliases and `if` results hold no storage: a read of one reads what it holds.
// A function's returned value lives to its end. A local function's body is walked where it is
// defined, and a callee's own peak is not added to its caller's live bytes at the call.
//
// Example:
//   std::vector<uint32_t> points = InputPoints(input);
//   std::vector<DevicePeak> peaks = PeakBytes(planned, points, machine);   // by machine device
//   if (peaks[d].bytes > machine.specs[d].memory_bytes) …                  // at peaks[d].point
#ifndef VDEV_SRC_PLANNER_INTERNAL_CAPACITY_H_
#define VDEV_SRC_PLANNER_INTERNAL_CAPACITY_H_

#include <cstdint>
#include <vector>

#include "src/planner/internal/planner.h"
#include "src/planner/placement_solver.h"
#include "vdev/planner/machine.h"

namespace vdev::planner_internal {

// Elements and bytes of a type (tuples summed; dynamic dims and unknown types count as empty).
struct TypeSize {
  double elements = 0;
  double bytes = 0;
  ir::DType dtype = ir::DType::kF32;
};
TypeSize SizeOf(const ir::Module& m, ir::TypeId type);

// The largest capacity a cut holds and the largest value it counts: sums of a cut's values then
// stay below 2^63 (a value that large fits no device; a device that large is taken as 2^60 bytes).
inline constexpr int64_t kMaxCapacityBytes = int64_t{1} << 60;
inline constexpr int64_t kMaxValueBytes = int64_t{1} << 61;

// Bytes as the capacity model counts them: at most kMaxValueBytes.
int64_t ClampedBytes(double bytes);
int64_t CapacityLimit(const Machine& machine, int device);

// A value that holds storage and the points [begin, end] where it is live. `source`: for a move
// (on_device, device_copy), the value it reads.
struct LiveValue {
  uint32_t item = 0;  // index into the module's items: points restart at 0 in each
  ir::ValueRef value;
  ir::ValueRef source;
  uint32_t begin = 0;
  uint32_t end = 0;
  int64_t bytes = 0;
};

// The point of each binding of `input` (by BindingId; UINT32_MAX for bindings in no walk).
std::vector<uint32_t> InputPoints(const ir::Module& input);

// The live values of every top-level function of `m`; `points` from InputPoints of the module that
// `m` was planned from (bindings past points.size() are the planner's copies). Moves that nothing
// reads (unused annotations) are left out.
std::vector<LiveValue> LiveValues(const ir::Module& m, const std::vector<uint32_t>& points);

struct DevicePeak {
  int64_t bytes = 0;
  uint32_t item = 0;  // where the peak is first reached
  uint32_t point = 0;
};
// The peak of live bytes on each machine device of a planned module (binding_devices, the devices
// of the parameters); values on a device the machine does not have are not counted.
std::vector<DevicePeak> PeakBytes(const PlanResult& plan, const std::vector<uint32_t>& points, const Machine& machine);

// The bytes that an assignment of the classes puts on `device` at `point`, as a cut: every value of
// `input` live there whose class is known (and, if passive, can be on the machine), counted when its class is on `device` (a move whose
// source is live there too: only when the source's class is not, so one buffer is counted once).
// `term_values` (when given) gets the value of each term.
PlacementModel::CapacityCut CapacityCutAt(const std::vector<LiveValue>& input_values, const PlacementClasses& classes,
                                          const Machine& machine, uint32_t item, uint32_t point, int device,
                                          int64_t limit, std::vector<ir::ValueRef>* term_values = nullptr);

// The input binding at a point (for an odd point, the one before it), for messages.
ir::BindingId BindingAt(const ir::Module& input, uint32_t item, uint32_t point);

}  // namespace vdev::planner_internal

#endif  // VDEV_SRC_PLANNER_INTERNAL_CAPACITY_H_
