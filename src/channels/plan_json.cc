// Execution plans as JSON (format in vdev/channels/channel_plan.h and docs/channels.md).
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "vdev/channels/channel_plan.h"
#include "vdev/support/diagnostic.h"
#include "vdev/support/status_macros.h"

namespace vdev::channels {
namespace {

using Json = nlohmann::ordered_json;

Json RefToJson(const ChunkRef& c) {
  Json j = {{"rank", c.rank}, {"buffer", BufferName(c.buffer)}, {"index", c.index}};
  if (c.count != 1) j["count"] = c.count;
  if (c.packets) j["packets"] = true;
  return j;
}

Json OpToJson(const Op& op) {
  Json j = {{"op", OpName(op.kind)}};
  if (op.channel >= 0) j["channel"] = op.channel;
  const bool has_chunks = !op.srcs.empty();
  if (has_chunks) {
    j["dst"] = RefToJson(op.dst);
    Json srcs = Json::array();
    for (const ChunkRef& s : op.srcs) srcs.push_back(RefToJson(s));
    j["srcs"] = srcs;
  }
  if (op.sync != Sync::kNone) j["sync"] = SyncName(op.sync);
  if (op.relaxed) j["relaxed"] = true;
  if (op.with_signal) j["with_signal"] = true;
  if (op.with_flush) j["with_flush"] = true;
  if (op.parts != 1) {
    j["part"] = op.part;
    j["parts"] = op.parts;
  }
  return j;
}

Json ChannelsToJson(const std::vector<ChannelSpec>& channels) {
  Json a = Json::array();
  for (const ChannelSpec& c : channels) a.push_back({{"src", c.src}, {"dst", c.dst}, {"tag", c.tag}});
  return a;
}

// Reads fields of one JSON object, naming the path of whatever is wrong.
class Reader {
 public:
  Reader(const Json& j, std::string path) : j_(j), path_(std::move(path)) {}

  absl::Status Object(std::initializer_list<const char*> allowed) const {
    if (!j_.is_object()) return Error(path_, "expected an object");
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      bool known = false;
      for (const char* a : allowed) known = known || it.key() == a;
      if (!known) return Error(Path(it.key()), "unknown field");
    }
    return absl::OkStatus();
  }
  std::string Path(absl::string_view key) const { return absl::StrCat(path_, path_.empty() ? "" : ".", key); }
  const Json* Find(const char* key) const { return j_.contains(key) ? &j_.at(key) : nullptr; }

  absl::Status Int(const char* key, int* out, bool required, int lo = 0, int hi = 1 << 30) const {
    const Json* v = Find(key);
    if (v == nullptr) return required ? Error(Path(key), "missing") : absl::OkStatus();
    if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() > hi) {
      return Error(Path(key), absl::StrCat("expected an integer in ", lo, "..", hi));
    }
    *out = v->get<int>();
    return absl::OkStatus();
  }
  absl::Status Bool(const char* key, bool* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return absl::OkStatus();
    if (!v->is_boolean()) return Error(Path(key), "expected true or false");
    *out = v->get<bool>();
    return absl::OkStatus();
  }
  template <typename E, typename NameFn>
  absl::Status Enum(const char* key, E* out, bool required, std::initializer_list<E> values, NameFn name) const {
    const Json* v = Find(key);
    if (v == nullptr) return required ? Error(Path(key), "missing") : absl::OkStatus();
    std::string options;
    for (E e : values) {
      if (v->is_string() && v->get<std::string>() == name(e)) {
        *out = e;
        return absl::OkStatus();
      }
      absl::StrAppend(&options, options.empty() ? "" : ", ", name(e));
    }
    return Error(Path(key), absl::StrCat("expected one of ", options, ", found ", v->dump()));
  }
  absl::Status Array(const char* key, const Json** out, bool required) const {
    const Json* v = Find(key);
    if (v == nullptr) return required ? Error(Path(key), "missing") : absl::OkStatus();
    if (!v->is_array()) return Error(Path(key), "expected an array");
    *out = v;
    return absl::OkStatus();
  }
  static absl::Status Error(const std::string& path, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
  }

 private:
  const Json& j_;
  std::string path_;
};

absl::Status ReadRef(const Json& j, const std::string& path, ChunkRef* c) {
  Reader r(j, path);
  VDEV_RETURN_IF_ERROR(r.Object({"rank", "buffer", "index", "count", "packets"}));
  VDEV_RETURN_IF_ERROR(r.Int("rank", &c->rank, true));
  VDEV_RETURN_IF_ERROR(
      r.Enum("buffer", &c->buffer, true, {BufferKind::kInput, BufferKind::kOutput, BufferKind::kScratch}, BufferName));
  VDEV_RETURN_IF_ERROR(r.Int("index", &c->index, true));
  VDEV_RETURN_IF_ERROR(r.Int("count", &c->count, false, 1));
  return r.Bool("packets", &c->packets);
}

absl::Status ReadOp(const Json& j, const std::string& path, Op* op) {
  Reader r(j, path);
  VDEV_RETURN_IF_ERROR(
      r.Object({"op", "channel", "dst", "srcs", "sync", "relaxed", "with_signal", "with_flush", "part", "parts"}));
  VDEV_RETURN_IF_ERROR(r.Enum(
      "op", &op->kind, true,
      {OpKind::kPut, OpKind::kGet, OpKind::kSignal, OpKind::kWait, OpKind::kReduce, OpKind::kCopy, OpKind::kPutPackets,
       OpKind::kReadPutPackets, OpKind::kPortPut, OpKind::kPortSignal, OpKind::kPortWait, OpKind::kPortFlush},
      OpName));
  VDEV_RETURN_IF_ERROR(r.Int("channel", &op->channel, false, -1));
  if (const Json* dst = r.Find("dst")) VDEV_RETURN_IF_ERROR(ReadRef(*dst, r.Path("dst"), &op->dst));
  const Json* srcs = nullptr;
  VDEV_RETURN_IF_ERROR(r.Array("srcs", &srcs, false));
  if (srcs != nullptr) {
    for (size_t i = 0; i < srcs->size(); ++i) {
      op->srcs.emplace_back();
      VDEV_RETURN_IF_ERROR(ReadRef((*srcs)[i], absl::StrCat(r.Path("srcs"), "[", i, "]"), &op->srcs.back()));
    }
  }
  if ((r.Find("dst") == nullptr) != (srcs == nullptr)) {
    return Reader::Error(path, "an op has both \"dst\" and \"srcs\" or neither");
  }
  VDEV_RETURN_IF_ERROR(
      r.Enum("sync", &op->sync, false, {Sync::kNone, Sync::kBefore, Sync::kAfter, Sync::kBoth}, SyncName));
  VDEV_RETURN_IF_ERROR(r.Bool("relaxed", &op->relaxed));
  VDEV_RETURN_IF_ERROR(r.Bool("with_signal", &op->with_signal));
  VDEV_RETURN_IF_ERROR(r.Bool("with_flush", &op->with_flush));
  VDEV_RETURN_IF_ERROR(r.Int("part", &op->part, false));
  return r.Int("parts", &op->parts, false, 1);
}

absl::Status ReadChannels(const Reader& r, const char* key, std::vector<ChannelSpec>* out) {
  const Json* a = nullptr;
  VDEV_RETURN_IF_ERROR(r.Array(key, &a, false));
  if (a == nullptr) return absl::OkStatus();
  for (size_t i = 0; i < a->size(); ++i) {
    Reader c((*a)[i], absl::StrCat(key, "[", i, "]"));
    ChannelSpec spec;
    VDEV_RETURN_IF_ERROR(c.Object({"src", "dst", "tag"}));
    VDEV_RETURN_IF_ERROR(c.Int("src", &spec.src, true));
    VDEV_RETURN_IF_ERROR(c.Int("dst", &spec.dst, true));
    VDEV_RETURN_IF_ERROR(c.Int("tag", &spec.tag, false));
    out->push_back(spec);
  }
  return absl::OkStatus();
}

absl::StatusOr<ProgramSpec> ReadProgram(const Json& j) {
  Reader r(j, "");
  VDEV_RETURN_IF_ERROR(r.Object({"format", "name", "collective", "world_size", "root", "chunks_per_segment",
                                 "scratch_chunks", "memory_channels", "port_channels", "ranks"}));
  const Json* format = r.Find("format");
  if (format == nullptr || !format->is_string() || format->get<std::string>() != kPlanFormat) {
    return Reader::Error("format", absl::StrCat("expected \"", kPlanFormat, "\""));
  }
  ProgramSpec p;
  const Json* name = r.Find("name");
  if (name == nullptr || !name->is_string()) return Reader::Error("name", "expected a string");
  p.name = name->get<std::string>();
  VDEV_RETURN_IF_ERROR(
      r.Enum("collective", &p.collective, true,
             {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather, Collective::kBroadcast},
             CollectiveName));
  VDEV_RETURN_IF_ERROR(r.Int("world_size", &p.world_size, true, 1, 64));
  VDEV_RETURN_IF_ERROR(r.Int("root", &p.root, false));
  VDEV_RETURN_IF_ERROR(r.Int("chunks_per_segment", &p.chunks_per_segment, false, 1));
  VDEV_RETURN_IF_ERROR(r.Int("scratch_chunks", &p.scratch_chunks, false));
  VDEV_RETURN_IF_ERROR(ReadChannels(r, "memory_channels", &p.memory_channels));
  VDEV_RETURN_IF_ERROR(ReadChannels(r, "port_channels", &p.port_channels));
  const Json* ranks = nullptr;
  VDEV_RETURN_IF_ERROR(r.Array("ranks", &ranks, true));
  p.ranks.resize(ranks->size());
  for (size_t i = 0; i < ranks->size(); ++i) {
    Reader rank((*ranks)[i], absl::StrCat("ranks[", i, "]"));
    VDEV_RETURN_IF_ERROR(rank.Object({"rank", "thread_blocks"}));
    int number = static_cast<int>(i);
    VDEV_RETURN_IF_ERROR(rank.Int("rank", &number, false));
    if (number != static_cast<int>(i)) return Reader::Error(rank.Path("rank"), absl::StrCat("expected ", i));
    const Json* tbs = nullptr;
    VDEV_RETURN_IF_ERROR(rank.Array("thread_blocks", &tbs, true));
    for (size_t t = 0; t < tbs->size(); ++t) {
      Reader tb((*tbs)[t], absl::StrCat(rank.Path("thread_blocks"), "[", t, "]"));
      VDEV_RETURN_IF_ERROR(tb.Object({"tb", "ops"}));
      const Json* ops = nullptr;
      VDEV_RETURN_IF_ERROR(tb.Array("ops", &ops, true));
      p.ranks[i].emplace_back();
      for (size_t o = 0; o < ops->size(); ++o) {
        p.ranks[i].back().ops.emplace_back();
        VDEV_RETURN_IF_ERROR(
            ReadOp((*ops)[o], absl::StrCat(tb.Path("ops"), "[", o, "]"), &p.ranks[i].back().ops.back()));
      }
    }
  }
  return p;
}

}  // namespace

std::string PlanToJson(const ProgramSpec& p) {
  Json ranks = Json::array();
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    Json tbs = Json::array();
    for (size_t t = 0; t < p.ranks[r].size(); ++t) {
      Json ops = Json::array();
      for (const Op& op : p.ranks[r][t].ops) ops.push_back(OpToJson(op));
      tbs.push_back({{"tb", t}, {"ops", ops}});
    }
    ranks.push_back({{"rank", r}, {"thread_blocks", tbs}});
  }
  Json j = {{"format", kPlanFormat},
            {"name", p.name},
            {"collective", CollectiveName(p.collective)},
            {"world_size", p.world_size},
            {"root", p.root},
            {"chunks_per_segment", p.chunks_per_segment},
            {"scratch_chunks", p.scratch_chunks},
            {"memory_channels", ChannelsToJson(p.memory_channels)},
            {"port_channels", ChannelsToJson(p.port_channels)},
            {"ranks", ranks}};
  return j.dump(1) + "\n";
}

namespace {

// FILE:LINE:COL of the byte at `offset` (0-based) of `text`.
std::string Location(absl::string_view text, absl::string_view file, size_t offset) {
  const SourceLoc loc = LocateOffset(text, offset);
  return absl::StrCat(file, ":", loc.line, ":", loc.col);
}

// nlohmann's message without its "[json.exception.KIND.N] " prefix and "parse error at ...: " part.
std::string Reason(const Json::exception& e) {
  std::string what = e.what();
  const size_t colon = what.rfind(": ");
  if (colon != std::string::npos) return what.substr(colon + 2);
  const size_t bracket = what.find("] ");
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

}  // namespace

absl::StatusOr<ProgramSpec> PlanFromJson(absl::string_view text, absl::string_view file) {
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    // e.byte is 1-based, one past the offending character.
    return absl::InvalidArgumentError(
        absl::StrCat(Location(text, file, e.byte > 0 ? e.byte - 1 : 0), ": error: ", Reason(e)));
  } catch (const Json::exception& e) {
    // A number out of range ("number overflow parsing '3e333'") carries no position: the first
    // occurrence of the quoted token gives it.
    const std::string reason = Reason(e);
    const size_t open = reason.find('\''), close = reason.rfind('\'');
    const size_t at = open != std::string::npos && close > open
                          ? text.find(absl::string_view(reason).substr(open + 1, close - open - 1))
                          : absl::string_view::npos;
    return absl::InvalidArgumentError(absl::StrCat(
        at == absl::string_view::npos ? std::string(file) : Location(text, file, at), ": error: ", reason));
  }
  if (!j.is_object()) {  // the fields' errors below name a path; the top level has none, but a position
    const size_t first = text.find_first_not_of(" \t\r\n");
    return absl::InvalidArgumentError(absl::StrCat(Location(text, file, first == absl::string_view::npos ? 0 : first),
                                                   ": error: expected a plan (a JSON object) at the top level, found ",
                                                   j.type_name()));
  }
  absl::StatusOr<ProgramSpec> p = ReadProgram(j);
  if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat(file, ": ", p.status().message()));
  absl::Status valid = ValidateProgram(*p);
  if (!valid.ok()) return absl::InvalidArgumentError(absl::StrCat(file, ": ", valid.message()));
  return p;
}

absl::StatusOr<ProgramSpec> LoadPlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream text;
  text << in.rdbuf();
  return PlanFromJson(text.str(), path);
}

}  // namespace vdev::channels
