// PlanDevices: runs the phases of src/planner/internal/planner.h in order.
#include "vdev/planner/plan_devices.h"

#include "src/planner/internal/planner.h"
#include "vdev/support/status_macros.h"

namespace vdev {
namespace planner_internal {

// --- Driver ------------------------------------------------------------------------------------

absl::Status Planner::Run() {
  default_device_ = devices_.Intern(options_.default_device.value_or(m_.config.EffectiveDefault()));
  host_device_ = devices_.Intern(options_.host_device.value_or(m_.config.EffectiveHost()));
  input_bindings_ = m_.bindings.size();
  device_copy_symbol_ = m_.symbols.Intern("device_copy");
  on_device_symbol_ = m_.symbols.Find("on_device");
  binding_domain_.assign(input_bindings_, kNoDomain);
  first_use_.assign(input_bindings_, kNoDomain);
  first_user_.assign(input_bindings_, ir::kNoBinding);
  flags_.assign(input_bindings_, 0);
  order_.reserve(input_bindings_);
  VDEV_RETURN_IF_ERROR(MakeSignatures());
  OrderBindings();
  // An on_device or device_copy whose value nothing uses is dropped and constrains nothing: planning
  // the output, where it is gone, must decide the same.
  MarkLive();
  ReserveForAnnotations();
  VDEV_RETURN_IF_ERROR(CollectAll());
  if (placement_ != nullptr) VDEV_RETURN_IF_ERROR(PlaceClasses());
  JoinFreeBoundaries();
  ApplyDefaults();
  result_.stats.bindings = order_.size();
  result_.stats.domains = domains_.size();
  result_.input_bindings = input_bindings_;
  // Only collection and defaulting read these (the pins for conflict messages): freeing them before
  // Capture allocates its outputs lowers the peak (8 bytes per binding, 16 per annotation).
  first_use_ = std::vector<DomainId>();
  first_user_ = std::vector<BindingId>();
  pins_ = std::vector<Pin>();
  Capture();
  return absl::OkStatus();
}

PlanResult Planner::TakeResult() {
  result_.module = std::move(m_);
  return std::move(result_);
}

absl::StatusOr<PlanResult> PlanWithPlacement(ir::Module&& module, const PlanOptions& options,
                                             const PlacementCallback& placement, PlanError* error) {
  ir::Module owned = std::move(module);
  Planner planner(owned, options, error, &placement);
  VDEV_RETURN_IF_ERROR(planner.Run());
  return planner.TakeResult();
}

}  // namespace planner_internal

absl::StatusOr<PlanResult> PlanDevices(ir::Module&& module, const PlanOptions& options, PlanError* error) {
  ir::Module owned = std::move(module);
  planner_internal::Planner planner(owned, options, error);
  VDEV_RETURN_IF_ERROR(planner.Run());
  return planner.TakeResult();
}

absl::StatusOr<PlanResult> PlanDevices(const ir::Module& module, const PlanOptions& options, PlanError* error) {
  return PlanDevices(module.Clone(), options, error);
}

}  // namespace vdev
