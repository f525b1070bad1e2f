// The channel language from Python (include/vdev/channels/channel_program.h, channel_plan.h,
// channel_algorithms.h, channel_executor.h): vdev.channels builds programs, validates them, converts
// execution plans to and from JSON and runs them on the host executor, one thread per rank. The
// classes here are the extension's (ChannelProgram, …); python/vdev/channels.py names them.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pybind11/numpy.h"
#include "pybind11/operators.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "vdev/channels/channel_algorithms.h"
#include "vdev/channels/channel_executor.h"
#include "vdev/channels/channel_plan.h"
#include "vdev/channels/channel_program.h"
#include "vdev/support/status_macros.h"

namespace vdev::python {
namespace {

using channels::BufferKind;
using channels::ChunkRef;
using channels::Collective;
using channels::ProgramSpec;
using channels::Sync;
using channels::Tb;

[[noreturn]] void RaiseChannelError(const absl::Status& status) {
  Raise("ChannelError", py::make_tuple(std::string(status.message())));
}

template <typename E, size_t N>
E Named(const char* what, const std::string& name, const E (&values)[N], absl::string_view (*name_of)(E)) {
  std::string known;
  for (E v : values) {
    if (name_of(v) == name) return v;
    absl::StrAppend(&known, known.empty() ? "" : ", ", name_of(v));
  }
  throw py::value_error(absl::StrCat("unknown ", what, " '", name, "' (expected ", known, ")"));
}

constexpr Collective kCollectives[] = {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                                       Collective::kBroadcast};
constexpr Sync kSyncs[] = {Sync::kNone, Sync::kBefore, Sync::kAfter, Sync::kBoth};
constexpr BufferKind kBuffers[] = {BufferKind::kInput, BufferKind::kOutput, BufferKind::kScratch};

Sync SyncArg(const std::string& name) { return Named("sync", name, kSyncs, channels::SyncName); }

// A thread block: an int, or (first, count) for a group that shares the op's data.
Tb TbArg(py::handle tb) {
  if (py::isinstance<py::int_>(tb)) return Tb(tb.cast<int>());
  if (py::isinstance<py::tuple>(tb) && py::len(tb) == 2) {
    auto [first, count] = tb.cast<std::pair<int, int>>();
    return Tb(first, count);
  }
  throw py::type_error("a thread block is an int or a (first, count) tuple");
}

// The builder and the channels it hands out. Build consumes the program: later calls raise.
struct PyProgram {
  std::optional<channels::Program> program;
  channels::Program& Get() {
    if (!program) throw py::value_error("this Program was built already; make a new one");
    return *program;
  }
};

template <typename Channel>
struct PyChannel {
  std::shared_ptr<PyProgram> owner;
  Channel channel;
  Channel& Get() {
    owner->Get();
    return channel;
  }
};
using PyMemoryChannel = PyChannel<channels::MemoryChannel>;
using PyPortChannel = PyChannel<channels::PortChannel>;

// The executor's element type of a NumPy dtype: float32, float64, int32, float16, and uint16 as
// bf16's bits (NumPy has no bfloat16).
std::optional<DataType> ChannelType(const py::dtype& dtype) {
  if (dtype.num() == py::dtype::of<float>().num()) return DataType::kF32;
  if (dtype.num() == py::dtype::of<double>().num()) return DataType::kF64;
  if (dtype.num() == py::dtype::of<int32_t>().num()) return DataType::kI32;
  if (dtype.num() == py::dtype("float16").num()) return DataType::kF16;
  if (dtype.num() == py::dtype::of<uint16_t>().num()) return DataType::kBF16;
  return std::nullopt;
}

// Runs `plan` once on the host executor with one thread per rank (channels::RunPlanInThreads).
// Returns every rank's output.
py::list Run(const ProgramSpec& plan, const std::vector<py::array>& arrays, int instances, double timeout_seconds) {
  const int world = plan.world_size;
  if (static_cast<int>(arrays.size()) != world) {
    throw py::value_error(absl::StrCat("the plan is for ", world, " ranks; ", arrays.size(), " inputs given"));
  }
  if (instances < 1) throw py::value_error("instances must be at least 1");
  if (timeout_seconds <= 0) throw py::value_error("timeout must be positive (seconds)");
  const py::dtype dtype = arrays[0].dtype();
  std::optional<DataType> type = ChannelType(dtype);
  if (!type) {
    throw py::type_error(
        absl::StrCat("the host plan executor runs float32, float64, int32, float16 or bf16 (as "
                     "uint16), found ",
                     std::string(py::str(py::object(dtype)))));
  }
  const int in_segments = channels::InputSegments(plan.collective, world);
  const int out_segments = channels::OutputSegments(plan.collective, world);
  const py::ssize_t elements = arrays[0].size();
  std::vector<py::array> inputs;
  for (int r = 0; r < world; ++r) {
    if (arrays[r].dtype().num() != dtype.num()) throw py::type_error("every rank's input must have one dtype");
    if (arrays[r].ndim() != 1 || arrays[r].size() != elements || elements == 0 || elements % in_segments != 0) {
      throw py::value_error(absl::StrCat("input of rank ", r,
                                         ": expected a non-empty 1-D array of the same size as "
                                         "every rank's, a multiple of ",
                                         in_segments, " (the collective's segments)"));
    }
    inputs.push_back(py::array::ensure(arrays[r], py::array::c_style));
  }
  const size_t count = static_cast<size_t>(elements / in_segments);
  std::vector<py::array> outputs;
  const py::ssize_t out_elements = static_cast<py::ssize_t>(count * out_segments);
  // The stride from vdev's element size: pybind11 2.10 reads NumPy 2's itemsize wrongly (numpy_tensors.cc).
  const py::ssize_t element_bytes = static_cast<py::ssize_t>(DataTypeSize(*type));
  for (int r = 0; r < world; ++r) {
    outputs.emplace_back(dtype, std::vector<py::ssize_t>{out_elements}, std::vector<py::ssize_t>{element_bytes});
  }
  std::vector<const void*> in(world);
  std::vector<void*> out(world);
  for (int r = 0; r < world; ++r) {
    in[r] = inputs[r].data();
    out[r] = outputs[r].mutable_data();
  }
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = channels::RunPlanInThreads(plan, in, out, count, *type, instances, absl::Seconds(timeout_seconds));
  }
  if (!status.ok()) RaiseChannelError(status);
  return py::cast(outputs);
}

ProgramSpec PlanFromJson(const std::string& text, const std::string& file) {
  absl::StatusOr<ProgramSpec> plan;
  {
    py::gil_scoped_release release;
    plan = channels::PlanFromJson(text, file);
  }
  if (!plan.ok()) RaiseChannelError(plan.status());
  return *std::move(plan);
}

// ChannelChunk: a rank's chunks.
void BindChunk(py::module_& m) {
  py::class_<ChunkRef>(m, "ChannelChunk", "`count` consecutive chunks of one rank's input, output or scratch.")
      .def(py::init([](int rank, const std::string& buffer, int index, int count, bool packets) {
             return ChunkRef{rank, Named("buffer", buffer, kBuffers, channels::BufferName), index, count, packets};
           }),
           py::arg("rank"), py::arg("buffer"), py::arg("index"), py::kw_only(), py::arg("count") = 1,
           py::arg("packets") = false)
      .def_readonly("rank", &ChunkRef::rank)
      .def_property_readonly("buffer", [](const ChunkRef& c) { return std::string(channels::BufferName(c.buffer)); })
      .def_readonly("index", &ChunkRef::index)
      .def_readonly("count", &ChunkRef::count)
      .def_readonly("packets", &ChunkRef::packets)
      .def("as_packets", &ChunkRef::AsPackets, "The same chunks read as LL packets (scratch only).")
      .def(py::self == py::self)
      .def("__repr__", [](const ChunkRef& c) {
        return absl::StrCat("ChannelChunk(", c.rank, ", '", channels::BufferName(c.buffer), "', ", c.index,
                            ", count=", c.count, c.packets ? ", packets=True" : "", ")");
      });
}

// ChannelPlan: a validated plan.
void BindChannelPlan(py::module_& m) {
  py::class_<ProgramSpec>(m, "ChannelPlan", "A validated channel program: the execution plan the executors load.")
      .def_readonly("name", &ProgramSpec::name)
      .def_property_readonly("collective",
                             [](const ProgramSpec& p) { return std::string(channels::CollectiveName(p.collective)); })
      .def_readonly("world_size", &ProgramSpec::world_size)
      .def_readonly("root", &ProgramSpec::root)
      .def_readonly("chunks_per_segment", &ProgramSpec::chunks_per_segment)
      .def_readonly("scratch_chunks", &ProgramSpec::scratch_chunks)
      .def_property_readonly(
          "thread_blocks",
          [](const ProgramSpec& p) {
            std::vector<int> out;
            for (const auto& rank : p.ranks) out.push_back(static_cast<int>(rank.size()));
            return out;
          },
          "The number of thread blocks of each rank.")
      .def("to_json", &channels::PlanToJson, "The plan's JSON (docs/channels.md); equal plans give equal text.")
      .def_static("from_json", &PlanFromJson, py::arg("text"), py::arg("file") = "<plan>",
                  "Parses and validates a plan; ChannelError (FILE:LINE:COL, or the field's path) otherwise.")
      .def(py::self == py::self)
      .def("__repr__", [](const ProgramSpec& p) {
        return absl::StrCat("<vdev.channels.Plan ", p.name, ": ", channels::CollectiveName(p.collective), " on ",
                            p.world_size, " ranks>");
      });
}

// ChannelMemoryChannel: SM copies between two ranks.
void BindMemoryChannel(py::module_& m) {
  py::class_<PyMemoryChannel>(m, "ChannelMemoryChannel",
                              "A channel from rank `src` into rank `dst`'s memory, used by `src` (SM copies).")
      .def_property_readonly("index", [](PyMemoryChannel& c) { return c.channel.index(); })
      .def(
          "put",
          [](PyMemoryChannel& c, py::handle tb, const ChunkRef& dst, const ChunkRef& src, const std::string& sync) {
            c.Get().Put(TbArg(tb), dst, src, SyncArg(sync));
          },
          py::arg("tb"), py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("sync") = "none")
      .def(
          "get",
          [](PyMemoryChannel& c, py::handle tb, const ChunkRef& dst, const ChunkRef& src, const std::string& sync) {
            c.Get().Get(TbArg(tb), dst, src, SyncArg(sync));
          },
          py::arg("tb"), py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("sync") = "none")
      .def(
          "signal",
          [](PyMemoryChannel& c, int tb, const std::string& sync, bool relaxed) {
            c.Get().Signal(tb, SyncArg(sync), relaxed);
          },
          py::arg("tb"), py::kw_only(), py::arg("sync") = "before", py::arg("relaxed") = false)
      .def(
          "wait",
          [](PyMemoryChannel& c, int tb, const std::string& sync, bool relaxed) {
            c.Get().Wait(tb, SyncArg(sync), relaxed);
          },
          py::arg("tb"), py::kw_only(), py::arg("sync") = "after", py::arg("relaxed") = false)
      .def(
          "reduce",
          [](PyMemoryChannel& c, py::handle tb, const ChunkRef& dst, std::vector<ChunkRef> srcs,
             const std::string& sync) { c.Get().Reduce(TbArg(tb), dst, std::move(srcs), SyncArg(sync)); },
          py::arg("tb"), py::arg("dst"), py::arg("srcs"), py::kw_only(), py::arg("sync") = "none")
      .def(
          "put_packets",
          [](PyMemoryChannel& c, int tb, const ChunkRef& dst, const ChunkRef& src, const std::string& sync) {
            c.Get().PutPackets(tb, dst, src, SyncArg(sync));
          },
          py::arg("tb"), py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("sync") = "none")
      .def(
          "read_put_packets",
          [](PyMemoryChannel& c, int tb, const ChunkRef& dst, const ChunkRef& src, const std::string& sync) {
            c.Get().ReadPutPackets(tb, dst, src, SyncArg(sync));
          },
          py::arg("tb"), py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("sync") = "none");
}

// ChannelPortChannel: copy-engine transfers served by a proxy.
void BindPortChannel(py::module_& m) {
  py::class_<PyPortChannel>(m, "ChannelPortChannel",
                            "A channel from rank `src` to rank `dst` served by a proxy thread of `src` (copy engine).")
      .def_property_readonly("index", [](PyPortChannel& c) { return c.channel.index(); })
      .def(
          "put",
          [](PyPortChannel& c, int tb, const ChunkRef& dst, const ChunkRef& src, const std::string& sync,
             bool with_signal, bool with_flush) {
            if (with_flush && !with_signal) throw py::value_error("with_flush needs with_signal");
            if (with_flush) return c.Get().PutWithSignalAndFlush(tb, dst, src, SyncArg(sync));
            if (with_signal) return c.Get().PutWithSignal(tb, dst, src, SyncArg(sync));
            c.Get().Put(tb, dst, src, SyncArg(sync));
          },
          py::arg("tb"), py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("sync") = "none",
          py::arg("with_signal") = false, py::arg("with_flush") = false)
      .def(
          "signal", [](PyPortChannel& c, int tb, const std::string& sync) { c.Get().Signal(tb, SyncArg(sync)); },
          py::arg("tb"), py::kw_only(), py::arg("sync") = "before")
      .def(
          "wait", [](PyPortChannel& c, int tb, const std::string& sync) { c.Get().Wait(tb, SyncArg(sync)); },
          py::arg("tb"), py::kw_only(), py::arg("sync") = "after")
      .def(
          "flush", [](PyPortChannel& c, int tb, const std::string& sync) { c.Get().Flush(tb, SyncArg(sync)); },
          py::arg("tb"), py::kw_only(), py::arg("sync") = "after");
}

// ChannelProgram: the builder.
void BindProgram(py::module_& m) {
  py::class_<PyProgram, std::shared_ptr<PyProgram>>(m, "ChannelProgram",
                                                    "The builder of a channel program (channel_program.h).")
      .def(py::init([](const std::string& name, const std::string& collective, int world_size, int chunks_per_segment,
                       int scratch_chunks, int root) {
             auto p = std::make_shared<PyProgram>();
             p->program.emplace(name, Named("collective", collective, kCollectives, channels::CollectiveName),
                                world_size, chunks_per_segment, scratch_chunks, root);
             return p;
           }),
           py::arg("name"), py::arg("collective"), py::arg("world_size"), py::kw_only(),
           py::arg("chunks_per_segment") = 1, py::arg("scratch_chunks") = 0, py::arg("root") = 0)
      .def_property_readonly("world_size", [](PyProgram& p) { return p.Get().world_size(); })
      .def_property_readonly("chunks_per_segment", [](PyProgram& p) { return p.Get().chunks_per_segment(); })
      .def(
          "input", [](PyProgram& p, int rank, int index, int count) { return p.Get().Input(rank, index, count); },
          py::arg("rank"), py::arg("index"), py::arg("count") = 1)
      .def(
          "output", [](PyProgram& p, int rank, int index, int count) { return p.Get().Output(rank, index, count); },
          py::arg("rank"), py::arg("index"), py::arg("count") = 1)
      .def(
          "scratch", [](PyProgram& p, int rank, int index, int count) { return p.Get().Scratch(rank, index, count); },
          py::arg("rank"), py::arg("index"), py::arg("count") = 1)
      .def(
          "add_memory_channel",
          [](const std::shared_ptr<PyProgram>& p, int dst, int src, int tag) {
            return PyMemoryChannel{p, p->Get().AddMemoryChannel(dst, src, tag)};
          },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("tag") = 0)
      .def(
          "add_port_channel",
          [](const std::shared_ptr<PyProgram>& p, int dst, int src, int tag) {
            return PyPortChannel{p, p->Get().AddPortChannel(dst, src, tag)};
          },
          py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("tag") = 0)
      .def(
          "copy",
          [](PyProgram& p, py::handle tb, const ChunkRef& dst, const ChunkRef& src, const std::string& sync) {
            p.Get().Copy(TbArg(tb), dst, src, SyncArg(sync));
          },
          py::arg("tb"), py::arg("dst"), py::arg("src"), py::kw_only(), py::arg("sync") = "none")
      .def(
          "reduce",
          [](PyProgram& p, py::handle tb, const ChunkRef& dst, std::vector<ChunkRef> srcs, const std::string& sync) {
            p.Get().Reduce(TbArg(tb), dst, std::move(srcs), SyncArg(sync));
          },
          py::arg("tb"), py::arg("dst"), py::arg("srcs"), py::kw_only(), py::arg("sync") = "none")
      .def(
          "build",
          [](PyProgram& p) {
            channels::Program program = std::move(p.Get());
            p.program.reset();
            absl::StatusOr<ProgramSpec> plan;
            {
              py::gil_scoped_release release;
              plan = std::move(program).Build();
            }
            if (!plan.ok()) RaiseChannelError(plan.status());
            return *std::move(plan);
          },
          "Validates the program (channel_program.h: ranges, deadlocks, races, the collective's result) and\n"
          "returns its plan; ChannelError naming rank, thread block and op otherwise. The builder is used up.");
}

// Validation, the shipped plans and the host executor.
void BindPlanFunctions(py::module_& m) {
  m.def(
      "validate_channel_plan",
      [](const ProgramSpec& plan) {
        absl::Status status;
        {
          py::gil_scoped_release release;
          status = channels::ValidateProgram(plan);
        }
        if (!status.ok()) RaiseChannelError(status);
      },
      py::arg("plan"), "ValidateProgram: ChannelError naming rank, thread block and op.");
  m.def(
      "shipped_channel_plan",
      [](const std::string& name, int world_size) {
        absl::StatusOr<ProgramSpec> plan = channels::ShippedPlan(name, world_size);
        if (!plan.ok()) RaiseChannelError(plan.status());
        return *std::move(plan);
      },
      py::arg("name"), py::arg("world_size"), "One of the shipped plans (channel_algorithms.h) for world_size ranks.");
  m.def("shipped_channel_plan_names", &channels::ShippedPlanNames);
  m.def("run_channel_plan", &Run, py::arg("plan"), py::arg("inputs"), py::kw_only(), py::arg("instances") = 1,
        py::arg("timeout") = 8.0,
        "Runs `plan` once on the host executor, one thread per rank (one 1-D array per rank: float32,\n"
        "float64, int32, float16, or uint16 as bf16 bits); returns every rank's output. ChannelError naming\n"
        "the rank on failure.");
}

}  // namespace

void BindChannels(py::module_& m) {
  BindChunk(m);
  BindChannelPlan(m);
  BindMemoryChannel(m);
  BindPortChannel(m);
  BindProgram(m);
  BindPlanFunctions(m);
}

}  // namespace vdev::python
