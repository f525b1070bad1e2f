#!/bin/bash
# One-off device call on two GPUs: the channel plans against the hand-written kernels and NCCL
# (allreduce_bench's plan-* variants): LL plans at about 1 KB a block against the build before
# (about 4 KB), in turn, twice over.
set -u
FINAL=$OUT; export OUT=/tmp/r; mkdir -p $OUT
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 VDEV_TIMEOUT_MS=60000 LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
for z in lib/*.xz; do xz -d -f "$z" 2>/dev/null || python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$z"; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvidia-smi topo -m; } > $OUT/env.log 2>&1
V=vdev-1shot-ll,plan-one_shot_ll,vdev-inplace,plan-one_shot,vdev-1shot,plan-one_shot_push,vdev-2shot,plan-two_shot,vdev-auto,nccl
i=0
for b in before . before .; do
  i=$((i+1)); name=$([ $b = . ] && echo this || echo before); exe=$([ $b = . ] && echo allreduce_bench || echo allreduce_bench_before)
  CUDA_VISIBLE_DEVICES=0,1 timeout 100 bin/vdev launch -n 2 -- bin/$exe --min-bytes 1024 --max-bytes 4194304 \
    --no-llm --no-eager --variants $V --csv $OUT/plans2_${i}_$name.csv > $OUT/plans2_${i}_$name.log 2>&1
  echo "bench2 $i $name $? $(date -u +%T)"
done
grep -E "^graph" $OUT/plans2_4_this.log | head -14
tar czf $FINAL/results.tgz -C $OUT .
