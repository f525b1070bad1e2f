// A controller drives four worker processes: looks functions up, calls them (DRef arguments resolve
// per worker), copies a tensor to worker 0 and back, all-reduces over the host collectives, syncs.
//
//   build/examples/session/session_example     # prints what expected_output.txt holds
#include <iostream>

#include "vdev/controller/controller.h"
#include "vdev/controller/worker_function.h"
#include "vdev/support/status_macros.h"

namespace {

// x * (k + 1), elementwise, for an f32 tensor x and an int k: each worker scales by its own k.
VDEV_REGISTER_WORKER_FUNCTION("example.scale",
                              [](vdev::WorkerContext&,
                                 const vdev::WorkerArgs& args) -> absl::StatusOr<vdev::WorkerValue> {
                                VDEV_RETURN_IF_ERROR(args.ExpectCount(2));
                                VDEV_ASSIGN_OR_RETURN(auto x, args.Tensor(0));
                                VDEV_ASSIGN_OR_RETURN(int64_t k, args.Int(1));
                                if (x->dtype != vdev::ir::DType::kF32)
                                  return absl::InvalidArgumentError("example.scale takes f32");
                                auto y = std::make_shared<vdev::HostTensor>(*x);
                                float* v = reinterpret_cast<float*>(y->bytes.data());
                                for (int64_t i = 0; i < y->NumElements(); ++i) v[i] *= static_cast<float>(k + 1);
                                return y;
                              });

absl::Status Run() {
  VDEV_ASSIGN_OR_RETURN(auto session, vdev::ControllerSession::Process(4, {}));
  std::cout << "workers: " << session->num_workers() << "\n";

  VDEV_ASSIGN_OR_RETURN(vdev::RemoteFunc worker_id, session->GetGlobalFunc("vdev.worker.id"));
  VDEV_ASSIGN_OR_RETURN(vdev::DRef ids, session->CallPacked(worker_id));  // queued; returns at once
  for (int w = 0; w < session->num_workers(); ++w) {
    VDEV_ASSIGN_OR_RETURN(vdev::Value id, ids.DebugGetFromRemote(w));  // waits for worker w
    std::cout << "worker " << w << " has id " << std::get<int64_t>(id.v) << "\n";
  }

  VDEV_RETURN_IF_ERROR(session->InitCCL("host", {}));
  vdev::HostTensor x = vdev::HostTensor::Zeros(vdev::ir::DType::kF32, {4});
  float* xv = reinterpret_cast<float*>(x.bytes.data());
  for (int i = 0; i < 4; ++i) xv[i] = static_cast<float>(i + 1);

  VDEV_ASSIGN_OR_RETURN(vdev::RemoteFunc empty, session->GetGlobalFunc("vdev.tensor.empty"));
  VDEV_ASSIGN_OR_RETURN(vdev::RemoteFunc broadcast, session->GetGlobalFunc("vdev.ccl.broadcast"));
  VDEV_ASSIGN_OR_RETURN(vdev::RemoteFunc scale, session->GetGlobalFunc("example.scale"));
  VDEV_ASSIGN_OR_RETURN(vdev::RemoteFunc allreduce, session->GetGlobalFunc("vdev.ccl.allreduce"));
  VDEV_ASSIGN_OR_RETURN(vdev::DRef on0, session->CallPacked(empty, vdev::Shape{4}, "f32"));
  VDEV_RETURN_IF_ERROR(session->CopyToWorker0(x, on0));
  VDEV_ASSIGN_OR_RETURN(vdev::DRef everywhere, session->CallPacked(broadcast, on0));
  VDEV_ASSIGN_OR_RETURN(vdev::DRef scaled, session->CallPacked(scale, everywhere, ids));
  VDEV_ASSIGN_OR_RETURN(vdev::DRef sum, session->CallPacked(allreduce, scaled));
  VDEV_RETURN_IF_ERROR(session->SyncWorker(0));

  vdev::HostTensor out;
  VDEV_RETURN_IF_ERROR(session->CopyFromWorker0(&out, sum));
  std::cout << "sum over workers of x * (id + 1):";
  for (int64_t i = 0; i < out.NumElements(); ++i) std::cout << " " << vdev::ReadAsDouble(out.Ref(), i);
  std::cout << "\n";

  // An error on a worker comes back naming the worker, the function and the command: worker 2's
  // register of `ids` now holds a string, so only worker 2's call fails.
  VDEV_RETURN_IF_ERROR(session->DebugSetRegister(ids.reg_id(), "two", 2));
  VDEV_ASSIGN_OR_RETURN(vdev::DRef bad, session->CallPacked(scale, everywhere, ids));
  absl::Status failed = session->SyncAllWorkers();
  std::cout << "a bad call: " << failed.message() << "\n";
  std::cout << "afterwards: " << session->SyncWorker(1).message() << "\n";
  return session->Shutdown();
}

}  // namespace

int main(int argc, char** argv) {
  vdev::MaybeRunWorker(argc, argv);  // worker processes run commands here and never return
  absl::Status status = Run();
  if (!status.ok()) {
    std::cerr << status << "\n";
    return 1;
  }
  return 0;
}
