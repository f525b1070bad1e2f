// All-reduce fusion: a rewrite of a planned module, run after planning and before memory lowering.
//
// The shape of every tensor-parallel transformer block ends an attention or MLP half with
//
//   %ar = allreduce(%x, op=sum)            // the partial sums of the workers
//   %v  = reshape(%ar, [...])              // optional: any chain of reshapes
//   %h  = add(%residual, %v)               // the residual stream (either operand order)
//   %n  = rms_norm(%h, %gamma, epsilon=e)  // the next half's input
//
// FuseAllReduceAddNorm turns each such chain into one op that reads the all-reduce's inputs, adds
// the residual and normalises in one pass, writing both results:
//
//   %f = vdev.allreduce_add_rms_norm(%x, %residual, %gamma, op=sum, epsilon=e)   // (h, n)
//   %h = %f.0
//   %n = %f.1
//
// Conditions (otherwise the chain is left alone): all bindings are top-level bindings of one
// function body, planned on the same device; the all-reduce sums; its result (and each reshape in
// the chain) has exactly one use, the next link; the add's operands have the same type (no
// broadcast); the rms_norm reads %h as its input; %gamma is a parameter or is bound before the add
// (the fused op takes the add's place); the dtype is f32, f16 or bf16. %h may have other uses.
// Memory lowering then treats the fused op's first operand like an all-reduce input (its producer
// writes into ipc_memory). The all-reduce binding and the reshapes leave the body.
#ifndef VDEV_FUSE_ALLREDUCE_H_
#define VDEV_FUSE_ALLREDUCE_H_

#include <string>
#include <vector>

#include "vdev/ir/ir.h"

namespace vdev {

// The op the fusion writes, and the kernel the executor runs after the all-reduce part of it.
inline constexpr char kFusedAllReduceOp[] = "vdev.allreduce_add_rms_norm";
inline constexpr char kAddRmsNormKernel[] = "vdev.add_rms_norm";

// One fused chain: the new binding and the names of the bindings it replaced.
struct FusedAllReduce {
  ir::BindingId fused = ir::kNoBinding;
  std::string allreduce, add, norm;  // binding names, without `%`
};

// Rewrites `module` in place; `binding_devices` (PlanResult::binding_devices) gets the devices of
// the bindings added. Returns the chains fused, in program order.
std::vector<FusedAllReduce> FuseAllReduceAddNorm(ir::Module& module, std::vector<ir::DeviceId>& binding_devices);

}  // namespace vdev

#endif  // VDEV_FUSE_ALLREDUCE_H_
