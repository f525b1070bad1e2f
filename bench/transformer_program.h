// Generates the text of a tensor-parallel transformer program (Megatron-style, one worker's share),
// for the memory benchmark and the `vdev lower` demo.
#ifndef VDEV_BENCH_TRANSFORMER_PROGRAM_H_
#define VDEV_BENCH_TRANSFORMER_PROGRAM_H_

#include <cstdint>
#include <string>

namespace vdev::bench {

struct TransformerShape {
  int layers = 10;
  int64_t tokens = 256;  // batch × sequence
  int64_t hidden = 4096;
  int64_t heads = 32;
  int64_t ffn = 11008;          // intermediate size of the gated MLP
  int64_t tensor_parallel = 4;  // workers; each holds heads/tp heads and ffn/tp columns
  int pipeline_stages = 1;      // consecutive layer ranges on cuda:0, cuda:1, …, linked by device_copy
  std::string dtype = "f16";    // of every tensor
};

// One `def @main` per worker: per layer, attention (rms_norm, fused QKV matmul, attention, output
// projection) and a gated MLP, each ending in `allreduce(op=sum)` of its row-parallel matmul (the
// MLP's through a reshape) and a residual add; the final hidden state is copied to cpu:0. With
// pipeline stages, stage s's weights are `on cuda:s` and the hidden state is copied between stages.
// All tensors of `dtype` with static shapes, types written. Built with a loop: any depth is fine.
std::string TransformerProgram(const TransformerShape& shape);

}  // namespace vdev::bench

#endif  // VDEV_BENCH_TRANSFORMER_PROGRAM_H_
