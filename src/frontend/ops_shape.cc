// ONNX ops that compute or change shapes and move data: Shape, Size, Constant, ConstantOfShape,
// Range, Reshape, Flatten, Squeeze, Unsqueeze, Expand, Concat, Split, Slice, Gather, Transpose,
// Identity, Dropout. Each folds when its data is known at import.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "internal/fold.h"
#include "vdev/support/status_macros.h"

namespace vdev::frontend::internal {
namespace {

using ir::Arg;

// Normalises `axis` against `rank`; an error naming the node when out of range.
absl::StatusOr<int64_t> NormAxis(const NodeCtx& c, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return c.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + r : axis;
}

// `x` (a value) with shape `dims`: folded for a constant, a vdev reshape otherwise.
absl::Status ReshapeTo(NodeCtx& c, int x, const Dims& dims) {
  if (NumElements(dims) != NumElements(c.Info(x).dims)) return c.Error("the new shape has a different element count");
  if (c.IsConstant(x)) {
    c.SetOutput(0, c.Constant(WithShape(*c.ConstantOf(x), dims)));
    return absl::OkStatus();
  }
  if (dims == c.Info(x).dims) {
    c.SetOutput(0, x);
    return absl::OkStatus();
  }
  if (NumElements(dims) == 0) {  // no data to move; reshape's 0 would mean "copy the input's dim"
    c.SetOutput(0, c.Constant(HostTensor::Zeros(c.Info(x).dtype, vdev::Shape(dims.begin(), dims.end()))));
    return absl::OkStatus();
  }
  VDEV_ASSIGN_OR_RETURN(int y, c.Emit("reshape", {x}, {{"newshape", Arg::IntList(dims)}}));
  c.SetOutput(0, y);
  return absl::OkStatus();
}

absl::Status Shape(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  const Dims& d = c.Info(x).dims;
  const int64_t r = static_cast<int64_t>(d.size());
  auto clamp = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
  const int64_t start = clamp(c.IntAttr("start", 0)), end = clamp(c.IntAttr("end", r));
  c.SetOutput(0, c.Constant(IntTensor(std::vector<int64_t>(d.begin() + start, d.begin() + std::max(start, end)))));
  return absl::OkStatus();
}

absl::Status Size(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  c.SetOutput(0, c.Constant(IntTensor({NumElements(c.Info(x).dims)}, Dims{})));
  return absl::OkStatus();
}

absl::Status Constant(NodeCtx& c) {
  if (const onnx::AttributeProto* a = c.Attr("value")) {
    absl::StatusOr<HostTensor> t = TensorFromProto(a->t());
    if (!t.ok()) return c.Error(t.status().message());
    c.SetOutput(0, c.Constant(*std::move(t)));
  } else if (const onnx::AttributeProto* f = c.Attr("value_float")) {
    HostTensor t = HostTensor::Zeros(ir::DType::kF32, {});
    WriteFromDouble(t.Ref(), 0, f->f());
    c.SetOutput(0, c.Constant(std::move(t)));
  } else if (const onnx::AttributeProto* fs = c.Attr("value_floats")) {
    HostTensor t = HostTensor::Zeros(ir::DType::kF32, {fs->floats_size()});
    for (int i = 0; i < fs->floats_size(); ++i) WriteFromDouble(t.Ref(), i, fs->floats(i));
    c.SetOutput(0, c.Constant(std::move(t)));
  } else if (const onnx::AttributeProto* i = c.Attr("value_int")) {
    c.SetOutput(0, c.Constant(IntTensor({i->i()}, Dims{})));
  } else if (std::optional<std::vector<int64_t>> is = c.IntsAttr("value_ints")) {
    c.SetOutput(0, c.Constant(IntTensor(*is)));
  } else {
    return c.Unsupported("a value other than value, value_float(s) or value_int(s)");
  }
  return absl::OkStatus();
}

absl::Status ConstantOfShape(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.IntsInput(0));
  HostTensor fill = HostTensor::Zeros(ir::DType::kF32, {1});
  if (const onnx::AttributeProto* a = c.Attr("value")) {
    absl::StatusOr<HostTensor> t = TensorFromProto(a->t());
    if (!t.ok()) return c.Error(t.status().message());
    fill = *std::move(t);
  }
  c.SetOutput(0, c.Constant(BroadcastTo(WithShape(fill, {}), dims)));
  return absl::OkStatus();
}

// Range's output has ceil((limit - start) / delta) elements, so its inputs must be known at import:
// with one computed at run time the output shape depends on a run-time value, which vdev's static
// shapes cannot express.
absl::Status Range(NodeCtx& c) {
  const HostTensor* in[3];
  for (size_t i = 0; i < 3; ++i) {
    VDEV_RETURN_IF_ERROR(c.Input(i).status());
    absl::StatusOr<const HostTensor*> known = c.ConstInput(i);
    if (!known.ok())
      return c.Error(absl::StrCat("the output shape depends on a run-time value: input ", i + 1, " ('",
                                  c.node().input(i), "') is computed at run time, and vdev's shapes are static"));
    in[i] = *known;
  }
  const HostTensor *start = in[0], *limit = in[1], *delta = in[2];
  const double s = ReadAsDouble(start->Ref(), 0), l = ReadAsDouble(limit->Ref(), 0), d = ReadAsDouble(delta->Ref(), 0);
  if (d == 0) return c.Error("delta is 0");
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((l - s) / d)));
  HostTensor out = HostTensor::Zeros(start->dtype, {n});
  for (int64_t i = 0; i < n; ++i) WriteFromDouble(out.Ref(), i, s + static_cast<double>(i) * d);
  c.SetOutput(0, c.Constant(std::move(out)));
  return absl::OkStatus();
}

absl::Status Reshape(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  VDEV_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.IntsInput(1));
  const Dims& in = c.Info(x).dims;
  const bool allow_zero = c.IntAttr("allowzero", 0) != 0;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      if (i >= in.size()) return c.Error("a 0 in the shape refers past the input's rank");
      shape[i] = in[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) return c.Error("the shape has more than one -1");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return c.Error(absl::StrCat("shape entry ", shape[i], " is negative"));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || NumElements(in) % known != 0) return c.Error("the shape does not divide the input's size");
    shape[infer] = NumElements(in) / known;
  }
  return ReshapeTo(c, x, shape);
}

absl::Status Flatten(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  const Dims& in = c.Info(x).dims;
  int64_t axis = c.IntAttr("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(in.size());
  if (axis < 0 || axis > static_cast<int64_t>(in.size())) return c.Error("axis is out of range");
  const int64_t outer = NumElements(Dims(in.begin(), in.begin() + axis));
  return ReshapeTo(c, x, {outer, NumElements(in) / std::max<int64_t>(outer, 1)});
}

// The axes of Squeeze/Unsqueeze: an attribute before opset 13, an optional input since.
absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOf(NodeCtx& c) {
  if (c.opset() < 13) return c.IntsAttr("axes");
  if (!c.has_input(1)) return std::optional<std::vector<int64_t>>();
  VDEV_ASSIGN_OR_RETURN(std::vector<int64_t> axes, c.IntsInput(1));
  return std::optional<std::vector<int64_t>>(std::move(axes));
}

absl::Status Squeeze(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, AxesOf(c));
  const Dims& in = c.Info(x).dims;
  std::vector<bool> drop(in.size(), false);
  if (!axes) {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  }
  for (int64_t a : axes.value_or(std::vector<int64_t>{})) {
    VDEV_ASSIGN_OR_RETURN(int64_t k, NormAxis(c, a, in.size()));
    if (in[k] != 1) return c.Error(absl::StrCat("axis ", a, " has size ", in[k], ", not 1"));
    drop[k] = true;
  }
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!drop[i]) out.push_back(in[i]);
  }
  return ReshapeTo(c, x, out);
}

absl::Status Unsqueeze(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  VDEV_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, AxesOf(c));
  if (!axes) return c.Error("needs axes");
  const Dims& in = c.Info(x).dims;
  const size_t rank = in.size() + axes->size();
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    VDEV_ASSIGN_OR_RETURN(int64_t k, NormAxis(c, a, rank));
    if (inserted[k]) return c.Error(absl::StrCat("axis ", a, " is repeated"));
    inserted[k] = true;
  }
  Dims out;
  for (size_t i = 0, j = 0; i < rank; ++i) out.push_back(inserted[i] ? 1 : in[j++]);
  return ReshapeTo(c, x, out);
}

absl::Status Expand(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  VDEV_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.IntsInput(1));
  std::optional<Dims> out = BroadcastDims(c.Info(x).dims, shape);
  if (!out) return c.Error("the shape does not broadcast with the input's");
  if (c.IsConstant(x)) {
    VDEV_ASSIGN_OR_RETURN(const HostTensor* t, c.ConstInput(0));
    c.SetOutput(0, c.Constant(BroadcastTo(*t, *out)));
    return absl::OkStatus();
  }
  if (*out == c.Info(x).dims) {
    c.SetOutput(0, x);
    return absl::OkStatus();
  }
  VDEV_ASSIGN_OR_RETURN(int y, c.Emit("broadcast_to", {x}, {{"shape", Arg::IntList(*out)}}));
  c.SetOutput(0, y);
  return absl::OkStatus();
}

absl::Status Concat(NodeCtx& c) {
  std::vector<OpArg> parts;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    VDEV_ASSIGN_OR_RETURN(int v, c.Input(i));
    if (NumElements(c.Info(v).dims) > 0 || c.num_inputs() == 1) parts.push_back(v);  // ONNX allows empty parts
  }
  if (parts.empty()) return c.Error("needs a non-empty input");
  const Dims first = c.Info(parts[0].value).dims;
  VDEV_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.IntAttr("axis", 0), first.size()));
  if (c.AllInputsConstant()) {
    Dims out = first;
    out[axis] = 0;
    for (const OpArg& p : parts) out[axis] += c.Info(p.value).dims[axis];
    HostTensor result = HostTensor::Zeros(c.Info(parts[0].value).dtype, vdev::Shape(out.begin(), out.end()));
    const int64_t outer = NumElements(Dims(first.begin(), first.begin() + axis));
    std::byte* dst = result.bytes.data();
    for (int64_t o = 0; o < outer; ++o) {
      for (const OpArg& p : parts) {
        const HostTensor& t = *c.ConstantOf(p.value);
        const size_t chunk = t.bytes.size() / std::max<int64_t>(outer, 1);
        std::memcpy(dst, t.bytes.data() + o * chunk, chunk);
        dst += chunk;
      }
    }
    c.SetOutput(0, c.Constant(std::move(result)));
    return absl::OkStatus();
  }
  VDEV_ASSIGN_OR_RETURN(int y, c.Emit("concatenate", parts, {{"axis", Arg::Int(axis)}}));
  c.SetOutput(0, y);
  return absl::OkStatus();
}

absl::Status Split(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  const Dims& in = c.Info(x).dims;
  VDEV_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.IntAttr("axis", 0), in.size()));
  std::vector<int64_t> sizes;
  if (c.opset() < 13) {
    sizes = c.IntsAttr("split").value_or(std::vector<int64_t>{});
  } else if (c.has_input(1)) {
    VDEV_ASSIGN_OR_RETURN(sizes, c.IntsInput(1));
  }
  const int64_t parts = static_cast<int64_t>(c.num_outputs());
  if (sizes.empty()) {
    if (in[axis] % parts != 0) return c.Error(absl::StrCat("axis of size ", in[axis], " does not split into ", parts));
    sizes.assign(parts, in[axis] / parts);
  }
  if (static_cast<int64_t>(sizes.size()) != parts ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != in[axis])
    return c.Error("the split sizes do not add up to the axis or do not match the outputs");
  if (parts == 1) {
    c.SetOutput(0, x);
    return absl::OkStatus();
  }
  std::vector<int64_t> indices;
  for (int64_t i = 0, at = 0; i + 1 < parts; ++i) indices.push_back(at += sizes[i]);
  VDEV_ASSIGN_OR_RETURN(
      std::vector<int> ys,
      c.EmitTuple("split", {x}, {{"indices_or_sections", Arg::IntList(indices)}, {"axis", Arg::Int(axis)}}));
  for (size_t i = 0; i < ys.size(); ++i) c.SetOutput(i, ys[i]);
  return absl::OkStatus();
}

// Slice's bounds, normalised per ONNX to every axis: begin, end (exclusive; -1 allowed for a
// negative step) and step.
struct SliceBounds {
  Dims begin, end, step, out;
};

absl::StatusOr<SliceBounds> SliceBoundsOf(NodeCtx& c, const Dims& in) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.IntsAttr("starts").value_or(starts);
    ends = c.IntsAttr("ends").value_or(ends);
    axes = c.IntsAttr("axes").value_or(axes);
  } else {
    VDEV_ASSIGN_OR_RETURN(starts, c.IntsInput(1));
    VDEV_ASSIGN_OR_RETURN(ends, c.IntsInput(2));
    if (c.has_input(3)) {
      VDEV_ASSIGN_OR_RETURN(axes, c.IntsInput(3));
    }
    if (c.has_input(4)) {
      VDEV_ASSIGN_OR_RETURN(steps, c.IntsInput(4));
    }
  }
  if (axes.empty()) axes.resize(starts.size()), std::iota(axes.begin(), axes.end(), 0);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return c.Error("starts, ends, axes and steps differ in length");
  const size_t rank = in.size();
  SliceBounds b{Dims(rank, 0), in, Dims(rank, 1), in};
  for (size_t i = 0; i < starts.size(); ++i) {
    VDEV_ASSIGN_OR_RETURN(int64_t a, NormAxis(c, axes[i], rank));
    const int64_t d = in[a], st = steps[i];
    if (st == 0) return c.Error("a step is 0");
    auto norm = [d](int64_t v) { return v < 0 ? (v < -d ? -d - 1 : v + d) : v; };
    int64_t s = norm(starts[i]), e = norm(ends[i]);
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
    }
    b.begin[a] = s, b.end[a] = e, b.step[a] = st;
    b.out[a] = st > 0 ? std::max<int64_t>(0, (e - s + st - 1) / st) : std::max<int64_t>(0, (s - e - st - 1) / -st);
  }
  return b;
}

absl::Status Slice(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  const Dims in = c.Info(x).dims;
  VDEV_ASSIGN_OR_RETURN(SliceBounds b, SliceBoundsOf(c, in));
  if (const HostTensor* t = c.ConstantOf(x)) {
    c.SetOutput(0, c.Constant(Remap(*t, b.out, [&](const Dims& coord) {
      int64_t index = 0;
      for (size_t k = 0; k < in.size(); ++k) index = index * in[k] + b.begin[k] + coord[k] * b.step[k];
      return index;
    })));
    return absl::OkStatus();
  }
  VDEV_ASSIGN_OR_RETURN(
      int y,
      c.Emit("strided_slice", {x},
             {{"begin", Arg::IntList(b.begin)}, {"end", Arg::IntList(b.end)}, {"strides", Arg::IntList(b.step)}}));
  c.SetOutput(0, y);
  return absl::OkStatus();
}

absl::Status Gather(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int data, c.Input(0));
  VDEV_ASSIGN_OR_RETURN(int indices, c.Input(1));
  const Dims in = c.Info(data).dims;
  VDEV_ASSIGN_OR_RETURN(int64_t axis, NormAxis(c, c.IntAttr("axis", 0), in.size()));
  if (const HostTensor* idx = c.ConstantOf(indices)) {
    // Known indices: negative ones are counted from the end here, as the kernel does not.
    std::vector<int64_t> fixed(idx->NumElements());
    for (size_t i = 0; i < fixed.size(); ++i) {
      const int64_t v = ReadInt(*idx, i);
      if (v < -in[axis] || v >= in[axis]) return c.Error(absl::StrCat("index ", v, " is out of range"));
      fixed[i] = v < 0 ? v + in[axis] : v;
    }
    const Dims idx_dims(idx->shape.begin(), idx->shape.end());
    if (const HostTensor* t = c.ConstantOf(data)) {
      Dims out(in.begin(), in.begin() + axis);
      out.insert(out.end(), idx_dims.begin(), idx_dims.end());
      out.insert(out.end(), in.begin() + axis + 1, in.end());
      c.SetOutput(0, c.Constant(Remap(*t, out, [&](const Dims& coord) {
        int64_t flat_index = 0;
        for (size_t k = 0; k < idx_dims.size(); ++k) flat_index = flat_index * idx_dims[k] + coord[axis + k];
        int64_t index = 0;
        for (size_t k = 0; k < in.size(); ++k) {
          const int64_t at = static_cast<int64_t>(k) < axis    ? coord[k]
                             : static_cast<int64_t>(k) == axis ? fixed[flat_index]
                                                               : coord[k - 1 + idx_dims.size()];
          index = index * in[k] + at;
        }
        return index;
      })));
      return absl::OkStatus();
    }
    indices = c.Constant(IntTensor(fixed, idx_dims));
  } else {
    // Indices known at run time only: a negative one counts from the end (take wants [0, n)).
    VDEV_ASSIGN_OR_RETURN(int negative, c.Emit("less", {indices, Arg::Int(0)}));
    VDEV_ASSIGN_OR_RETURN(int wrapped, c.Emit("add", {indices, Arg::Int(in[axis])}));
    VDEV_ASSIGN_OR_RETURN(indices, c.Emit("where", {negative, wrapped, indices}));
  }
  VDEV_ASSIGN_OR_RETURN(int y, c.Emit("take", {data, indices}, {{"axis", Arg::Int(axis)}}));
  c.SetOutput(0, y);
  return absl::OkStatus();
}

absl::Status Transpose(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  const Dims in = c.Info(x).dims;
  std::vector<int64_t> perm(in.size());
  std::iota(perm.rbegin(), perm.rend(), 0);
  perm = c.IntsAttr("perm").value_or(perm);
  VDEV_ASSIGN_OR_RETURN(int y, c.Emit("transpose", {x}, {{"axes", Arg::IntList(perm)}}));
  c.SetOutput(0, y);
  return absl::OkStatus();
}

// Whether Dropout leaves its input unchanged: at inference (training_mode false or absent), and in
// training mode with ratio 0. Both inputs must be known at import. Training with a ratio above 0
// draws a random mask, which vdev cannot compute (it has no random-number op).
absl::Status CheckDropoutIsIdentity(NodeCtx& c) {
  if (!c.has_input(2)) return absl::OkStatus();
  VDEV_ASSIGN_OR_RETURN(const HostTensor* training, c.ConstInput(2));
  if (ReadAsDouble(training->Ref(), 0) == 0) return absl::OkStatus();
  double ratio = 0.5;
  if (c.has_input(1)) {
    VDEV_ASSIGN_OR_RETURN(const HostTensor* r, c.ConstInput(1));
    ratio = ReadAsDouble(r->Ref(), 0);
  }
  if (ratio == 0) return absl::OkStatus();
  return c.Error(absl::StrCat("training mode with ratio ", ratio,
                              " draws a random mask, which vdev cannot compute (it has no random-number op)"));
}

// Identity, and Dropout that keeps every element (CheckDropoutIsIdentity): the input unchanged
// and Dropout's mask all true.
absl::Status Identity(NodeCtx& c) {
  VDEV_ASSIGN_OR_RETURN(int x, c.Input(0));
  if (c.node().op_type() == "Dropout") {
    VDEV_RETURN_IF_ERROR(CheckDropoutIsIdentity(c));
  }
  c.SetOutput(0, x);
  if (c.has_output(1)) {
    HostTensor ones = HostTensor::Zeros(ir::DType::kBool, {});
    WriteFromDouble(ones.Ref(), 0, 1);
    c.SetOutput(1, c.Constant(BroadcastTo(ones, c.Info(x).dims)));
  }
  return absl::OkStatus();
}

}  // namespace

void AddShapeHandlers(absl::flat_hash_map<std::string, Handler>& t) {
  t["Shape"] = Shape;
  t["Size"] = Size;
  t["Constant"] = Constant;
  t["ConstantOfShape"] = ConstantOfShape;
  t["Range"] = Range;
  t["Reshape"] = Reshape;
  t["Flatten"] = Flatten;
  t["Squeeze"] = Squeeze;
  t["Unsqueeze"] = Unsqueeze;
  t["Expand"] = Expand;
  t["Concat"] = Concat;
  t["Split"] = Split;
  t["Slice"] = Slice;
  t["Gather"] = Gather;
  t["Transpose"] = Transpose;
  t["Identity"] = Identity;
  t["Dropout"] = Identity;
}

}  // namespace vdev::frontend::internal
