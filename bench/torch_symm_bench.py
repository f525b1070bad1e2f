"""PyTorch symmetric-memory one_shot_all_reduce, timed like allreduce_bench (a second peer).

Run with `torchrun --nproc-per-node N bench/torch_symm_bench.py OUT.csv`. bf16, CUDA-graph replay of
`iters` back-to-back calls after a warm-up replay, median of `reps`, max over ranks; plus plain
dist.all_reduce (NCCL through PyTorch) in the same graphs for reference. NVLink multicast stays off.
"""
import csv
import os
import sys

os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    group_name = dist.group.WORLD.group_name
    max_bytes = 16 << 20
    buf = symm_mem.empty(max_bytes // 2, dtype=torch.bfloat16, device="cuda")
    symm_mem.rendezvous(buf, group_name)
    rows = []
    size = 1024
    while size <= max_bytes:
        n = size // 2
        t = buf[:n]
        idx = torch.arange(n, device="cuda")
        t.copy_(((idx * 7 + rank * 3 + 1) % 17).to(torch.bfloat16))
        want = sum(((idx * 7 + r * 3 + 1) % 17) for r in range(world)).to(torch.bfloat16)
        got = torch.ops.symm_mem.one_shot_all_reduce(t, "sum", group_name)
        ok = bool(torch.equal(got, want))
        iters = 50 if size <= (1 << 20) else 20
        results = {}
        for name in ("torch-symm-1shot", "torch-nccl"):
            stream = torch.cuda.Stream()
            nccl_buf = torch.empty(n, dtype=torch.bfloat16, device="cuda")
            with torch.cuda.stream(stream):
                for _ in range(2):  # warm-up before capture
                    if name == "torch-symm-1shot":
                        torch.ops.symm_mem.one_shot_all_reduce(t, "sum", group_name)
                    else:
                        dist.all_reduce(nccl_buf)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=stream):
                for _ in range(iters):
                    if name == "torch-symm-1shot":
                        torch.ops.symm_mem.one_shot_all_reduce(t, "sum", group_name)
                    else:
                        dist.all_reduce(nccl_buf)
            times = []
            for _ in range(15):
                g.replay()
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                e0.record()
                g.replay()
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1) * 1000 / iters)
            times.sort()
            med = torch.tensor([times[len(times) // 2]], device="cuda")
            dist.all_reduce(med, op=dist.ReduceOp.MAX)
            results[name] = med.item()
        okt = torch.tensor([1 if ok else 0], device="cuda")
        dist.all_reduce(okt, op=dist.ReduceOp.MIN)
        for name, us in results.items():
            algbw = size / us / 1e3
            rows.append([world, "graph", size, "", name, f"{us:.3f}", f"{algbw:.2f}",
                         f"{algbw * 2 * (world - 1) / world:.2f}", "ok" if okt.item() else "BAD", ""])
        if rank == 0:
            print(f"graph {size:12d} " + " ".join(f"{k}={v:.2f}" for k, v in results.items()),
                  "ok" if okt.item() else "BAD", flush=True)
        size *= 2
    if rank == 0:
        with open(sys.argv[1], "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["world", "mode", "bytes", "label", "variant", "us", "algbw_GBps", "busbw_GBps", "check",
                        "auto_choice"])
            w.writerows(rows)
    dist.barrier()
    # destroy_process_group() has been seen to hang on 4 GPUs; the results are written: leave now.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
