// The tensor-parallel transformer program generator; see transformer_program.h.
#include "transformer_program.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace vdev::bench {

std::string TransformerProgram(const TransformerShape& s) {
  const std::string& dt = s.dtype;
  auto Matrix = [&](int64_t a, int64_t b) { return absl::StrCat(dt, "[", a, ",", b, "]"); };
  const int64_t t = s.tokens, h = s.hidden, tp = s.tensor_parallel;
  const int64_t local_heads = s.heads / tp, head_dim = h / s.heads, local_h = local_heads * head_dim;
  const int64_t local_ffn = s.ffn / tp;
  std::string out = absl::StrCat("# ", s.layers, "-layer tensor-parallel transformer, one worker of ", tp, " (hidden ",
                                 h, ", ", t, " tokens, ", dt, ", ", s.pipeline_stages, " pipeline stage(s))\n");
  const int stages = std::max(1, s.pipeline_stages);
  auto stage_of = [&](int layer) { return layer * stages / s.layers; };
  absl::StrAppend(&out, "def @main(%x: ", Matrix(t, h), " on cuda:0");
  for (int l = 0; l < s.layers; ++l) {
    const std::string on = absl::StrCat(" on cuda:", stage_of(l));
    absl::StrAppend(&out, ",\n          %g1_", l, ": ", dt, "[", h, "]", on, ", %wqkv_", l, ": ",
                    Matrix(h, 3 * local_h), on, ", %wo_", l, ": ", Matrix(local_h, h), on, ", %g2_", l, ": ", dt, "[",
                    h, "]", on, ", %wgu_", l, ": ", Matrix(h, 2 * local_ffn), on, ", %wd_", l, ": ",
                    Matrix(local_ffn, h), on);
  }
  absl::StrAppend(&out, ") -> ", Matrix(t, h), " {\n");
  std::string hs = "%x";
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = absl::StrCat("%l", l, "_");
    if (l > 0 && stage_of(l) != stage_of(l - 1)) {
      absl::StrAppend(&out, "  ", p, "in: ", Matrix(t, h), " = device_copy(", hs, ", src=cuda:", stage_of(l - 1),
                      ", dst=cuda:", stage_of(l), ")\n");
      hs = absl::StrCat(p, "in");
    }
    auto bind = [&](absl::string_view name, const std::string& type, const std::string& expr) {
      absl::StrAppend(&out, "  ", p, name, ": ", type, " = ", expr, "\n");
    };
    bind("n1", Matrix(t, h), absl::StrCat("rms_norm(", hs, ", %g1_", l, ")"));
    bind("qkv", Matrix(t, 3 * local_h), absl::StrCat("matmul(", p, "n1, %wqkv_", l, ")"));
    bind("qkv4", absl::StrCat(dt, "[", t, ",3,", local_heads, ",", head_dim, "]"),
         absl::StrCat("reshape(", p, "qkv, [", t, ", 3, ", local_heads, ", ", head_dim, "])"));
    bind("att", absl::StrCat(dt, "[", t, ",", local_heads, ",", head_dim, "]"),
         absl::StrCat("attention(", p, "qkv4, causal=true)"));
    bind("att2", Matrix(t, local_h), absl::StrCat("reshape(", p, "att, [", t, ", ", local_h, "])"));
    bind("o", Matrix(t, h), absl::StrCat("matmul(", p, "att2, %wo_", l, ")"));
    bind("ar1", Matrix(t, h), absl::StrCat("allreduce(", p, "o, op=sum)"));
    bind("h1", Matrix(t, h), absl::StrCat("add(", hs, ", ", p, "ar1)"));
    bind("n2", Matrix(t, h), absl::StrCat("rms_norm(", p, "h1, %g2_", l, ")"));
    bind("gu", Matrix(t, 2 * local_ffn), absl::StrCat("matmul(", p, "n2, %wgu_", l, ")"));
    bind("act", Matrix(t, local_ffn), absl::StrCat("silu_mul(", p, "gu)"));
    bind("down", Matrix(t, h), absl::StrCat("matmul(", p, "act, %wd_", l, ")"));
    bind("flat", absl::StrCat(dt, "[", t * h, "]"), absl::StrCat("reshape(", p, "down, [", t * h, "])"));
    bind("ar2", absl::StrCat(dt, "[", t * h, "]"), absl::StrCat("allreduce(", p, "flat, op=sum)"));
    bind("mlp", Matrix(t, h), absl::StrCat("reshape(", p, "ar2, [", t, ", ", h, "])"));
    bind("h2", Matrix(t, h), absl::StrCat("add(", p, "h1, ", p, "mlp)"));
    hs = absl::StrCat(p, "h2");
  }
  absl::StrAppend(&out, "  %out: ", Matrix(t, h), " = device_copy(", hs, ", src=cuda:", stage_of(s.layers - 1),
                  ", dst=cpu:0)\n");
  absl::StrAppend(&out, "  return %out\n}\n");
  return out;
}

}  // namespace vdev::bench
