// The JSON report of `vdev lower --json`; see vdev/memory/lower_memory.h.
#include <map>
#include <string>

#include "json_object/json_object.h"
#include "nlohmann/json.hpp"
#include "vdev/memory/lower_memory.h"

namespace vdev {
namespace {

using Json = nlohmann::ordered_json;
using JsonObject = ir_internal::JsonObject<Json>;

std::string Local(const ir::Module& m, ir::BindingId b) { return std::string(m.Name(m.bindings[b].name)); }

Json FunctionReport(const ir::Module& m, const FunctionMemory& fm) {
  Json pools = Json::object();
  for (const PoolSize& p : fm.plan.pools) {
    pools[p.pool.ToString()] = {{"bytes", p.bytes}, {"storages", p.storages}};
  }
  JsonObject storages;
  storages.Reserve(fm.plan.storages.size());
  for (size_t s = 0; s < fm.plan.storages.size(); ++s) {
    const Storage& storage = fm.plan.storages[s];
    const ir::BindingId b = fm.storage_bindings[s];
    storages.Set(Local(m, b), {{"pool", storage.pool.ToString()},
                               {"allocator", std::string(m.OpName(m.bindings[b].expr))},
                               {"bytes", storage.bytes},
                               {"pool_offset", storage.pool_offset}});
  }
  JsonObject tensors;
  tensors.Reserve(fm.tensors.size());
  for (size_t k = 0; k < fm.tensors.size(); ++k) {
    const PlannedTensor& t = fm.tensors[k];
    const TensorLifetime& life = fm.lifetimes[k];
    tensors.Set(Local(m, t.binding), {{"storage", Local(m, fm.storage_bindings[t.storage])},
                                      {"offset", t.offset},
                                      {"bytes", t.bytes},
                                      {"live", {life.first_def, life.last_use}}});
  }
  Json allreduces = Json::array();
  for (const AllReduceInfo& a : fm.allreduces) {
    Json entry = {
        {"binding", Local(m, a.binding)}, {"op", a.op}, {"strategy", std::string(AllReduceStrategyName(a.strategy))}};
    if (a.fused) entry["fused"] = "add + rms_norm";
    if (a.ipc) {
      entry["input"] = Local(m, a.input_producer);
    } else {
      entry["reason"] = a.reason;
    }
    allreduces.push_back(std::move(entry));
  }
  Json unplanned = Json::array();
  for (const UnplannedValue& u : fm.unplanned)
    unplanned.push_back({{"binding", Local(m, u.binding)}, {"reason", u.reason}});
  return {{"pools", std::move(pools)},
          {"storages", std::move(storages).Take()},
          {"tensors", std::move(tensors).Take()},
          {"allreduces", std::move(allreduces)},
          {"unplanned", std::move(unplanned)},
          {"tensor_bytes", fm.plan.tensor_bytes},
          {"pool_bytes", fm.plan.pool_bytes}};
}

}  // namespace

std::string MemoryReportJson(const ir::Module& module, const MemoryPlan& plan) {
  JsonObject functions;
  std::map<PoolKey, int64_t> totals;
  for (const FunctionMemory& fm : plan.functions) {
    functions.Set(std::string(module.Name(module.functions[fm.func].name)), FunctionReport(module, fm));
    for (const PoolSize& p : fm.plan.pools) totals[p.pool] += p.bytes;
  }
  Json pools = Json::object();
  for (const auto& [pool, bytes] : totals) pools[pool.ToString()] = bytes;
  Json report = {{"functions", std::move(functions).Take()},
                 {"pools", pools},
                 {"tensor_bytes", plan.tensor_bytes},
                 {"pool_bytes", plan.pool_bytes}};
  return ir_internal::ReportText(report);
}

}  // namespace vdev
