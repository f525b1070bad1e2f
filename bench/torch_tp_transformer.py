"""The PyTorch peer of examples/memory/tp_transformer_10.vdev: one worker's share of the same
10-layer tensor-parallel transformer (hidden 4096, 8 heads of 128 per worker, MLP 2752 per worker),
written directly in PyTorch, timed as CUDA-graph replays.

Run with `torchrun --nproc-per-node 2 bench/torch_tp_transformer.py [--tokens 256] [--dtype bf16]`.
Per layer, as the .vdev program: n1 = rms_norm(x); qkv = n1 @ wqkv; causal attention (SDPA);
o = att @ wo; x1 = x + allreduce(o); n2 = rms_norm(x1); act = silu(gu[:, :F]) * gu[:, F:] with
gu = n2 @ wgu; x = x1 + allreduce(act @ wd). The all-reduce is dist.all_reduce (NCCL) or, with
symmetric memory, torch.ops.symm_mem.one_shot_all_reduce on a symmetric buffer the matmul writes
into (bf16 only: torch's one-shot refuses f16). Prints one line per variant:
`torch-<variant> tokens=T dtype=D ms=<median ms per forward, max over ranks>`.
"""
import argparse
import os

os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch
import torch.distributed as dist
import torch.nn.functional as F

HIDDEN, HEADS, HEAD_DIM, MLP, LAYERS = 4096, 8, 128, 2752, 10


def weights(tokens, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)

    def rand(*shape):
        # uniform in [-1, 1) / sqrt(first dimension), as `vdev run --inputs random:SEED` draws them
        scale = shape[0] ** -0.5 if len(shape) >= 2 else 1.0
        return ((torch.rand(*shape, generator=g, device="cuda") * 2 - 1) * scale).to(dtype)

    layers = []
    for _ in range(LAYERS):
        layers.append(dict(g1=rand(HIDDEN), wqkv=rand(HIDDEN, 3 * HEADS * HEAD_DIM), wo=rand(HEADS * HEAD_DIM, HIDDEN),
                           g2=rand(HIDDEN), wgu=rand(HIDDEN, 2 * MLP), wd=rand(MLP, HIDDEN)))
    return rand(tokens, HIDDEN), layers


def forward(x, layers, allreduce, scratch):
    tokens = x.shape[0]
    for w in layers:
        n1 = F.rms_norm(x, (HIDDEN,), w["g1"], eps=1e-6)
        qkv = (n1 @ w["wqkv"]).view(tokens, 3, HEADS, HEAD_DIM).permute(1, 2, 0, 3)
        att = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
        att = att.permute(1, 0, 2).reshape(tokens, HEADS * HEAD_DIM)
        x = x + allreduce(torch.matmul(att, w["wo"], out=scratch))
        n2 = F.rms_norm(x, (HIDDEN,), w["g2"], eps=1e-6)
        gu = n2 @ w["wgu"]
        act = F.silu(gu[:, :MLP]) * gu[:, MLP:]
        x = x + allreduce(torch.matmul(act, w["wd"], out=scratch))
    return x


def time_graph(fn, replays):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        out = fn()
    for _ in range(10):
        graph.replay()
    times = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(replays):
            graph.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / replays)
    times.sort()
    ms = torch.tensor([times[len(times) // 2]], device="cuda")
    dist.all_reduce(ms, op=dist.ReduceOp.MAX)
    return ms.item(), out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--dtype", choices=["bf16", "f16"], default="bf16")
    parser.add_argument("--replays", type=int, default=100)
    args = parser.parse_args()
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    x, layers = weights(args.tokens, dtype, seed=rank)
    plain = torch.empty(args.tokens, HIDDEN, dtype=dtype, device="cuda")

    def nccl(t):
        dist.all_reduce(t)
        return t

    variants = {"nccl": (nccl, plain)}
    if dtype == torch.bfloat16:
        import torch.distributed._symmetric_memory as symm_mem
        group = dist.group.WORLD.group_name
        symm = symm_mem.empty(args.tokens, HIDDEN, dtype=dtype, device="cuda")
        symm_mem.rendezvous(symm, group)
        variants["symm"] = (lambda t: torch.ops.symm_mem.one_shot_all_reduce(t, "sum", group), symm)
    results = {}
    for name, (allreduce, scratch) in variants.items():
        ms, out = time_graph(lambda: forward(x, layers, allreduce, scratch), args.replays)
        results[name] = (ms, out.float().abs().mean().item())
    if rank == 0:
        for name, (ms, mean_abs) in results.items():
            print(f"torch-{name} tokens={args.tokens} dtype={args.dtype} ms={ms:.4f} mean|out|={mean_abs:.4f}", flush=True)
    dist.barrier()
    os._exit(0)  # destroy_process_group() has hung on exit before (bench/torch_symm_bench.py)


if __name__ == "__main__":
    main()
