#!/bin/bash
# check_cuda_agent: the CUDA agent on a real GPU, for a machine with an NVIDIA
# driver, gcc, nvcc and the CUPTI headers (the device machine has them); run
# from the repository's root: bash tests/gpu/check_cuda_agent.sh. Never run
# by CMake or CI. It builds the agent from src/agents/cuda with gcc (no CMake,
# none of sonde's dependencies), tests/gpu/cuda_vector.cu with nvcc, and the
# wire reader (wire_check.c), then checks:
#   1. cuda_vector with the agent injected: one file, every line parses, V
#      first, no Q, every kind (V D K M S A Y G) there, every time inside the
#      program's CLOCK_MONOTONIC window (the agent's clock is sonde's);
#   2. a PyTorch matrix product (when torch imports): kernels recorded, no Q;
#      then the same under torch.profiler, whose outcome is printed only;
#   3. `sonde run` (when $SONDE or build/sonde runs here): the gpu_* tables.
# Files go to $OUT (default /tmp/sonde-gpu-check). Exit 1 on any FAIL line.
set -u
out=${OUT:-/tmp/sonde-gpu-check}
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
w=$(mktemp -d)
fail=0
bad() { echo "FAIL: $*"; fail=1; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || bad "nvidia-smi failed"
gcc -O2 -shared -fPIC -fvisibility=hidden -D_GNU_SOURCE -Wall -Wextra -Werror \
	-isystem "$cuda/include" -isystem "$cuda/extras/CUPTI/include" \
	src/agents/cuda/*.c -o "$w/libsonde_cuda.so" -ldl -lpthread || { bad "the agent does not build"; exit 1; }
gcc -O2 -D_GNU_SOURCE -Isrc tests/gpu/wire_check.c src/probes/gpu_wire.c src/probes/wire_fields.c \
	-o "$w/wire_check" || { bad "wire_check does not build"; exit 1; }
"$cuda/bin/nvcc" -O2 -o "$w/cuda_vector" tests/gpu/cuda_vector.cu || { bad "cuda_vector does not build"; exit 1; }
agent=$w/libsonde_cuda.so

# The lines of one kind, a few.
show() { grep -m "$2" "^$1	" "$3" | cut -c1-220; }

echo "== 1. cuda_vector with the agent injected"
d=$w/direct
mkdir "$d"
CUDA_INJECTION64_PATH=$agent SONDE_CUDA_DIR=$d "$w/cuda_vector" >"$w/vec.out" 2>"$w/vec.err" ||
	bad "cuda_vector exited $?"
cat "$w/vec.out"
[ -s "$w/vec.err" ] && { bad "the program's stderr is not empty:"; cat "$w/vec.err"; }
read -r _ t0 t1 _ <"$w/vec.out"
set -- "$d"/cuda-*.txt
[ $# -eq 1 ] && [ -f "$1" ] || bad "one cuda-PID.txt expected, found: $*"
f=$1
"$w/wire_check" "$f" "${t0:-0}" "${t1:-0}" || bad "wire_check refused the file"
for k in V D K M S A Y G; do grep -q "^$k	" "$f" || bad "no $k line"; done
grep "^Q" "$f" && bad "a Q line: CUPTI did not record"
for k in V D X K M S Y G; do show $k 4 "$f"; done
echo "runtime API names:"; grep "^A	" "$f" | cut -f7 | sort | uniq -c | sort -rn | head -20
cp "$f" "$out/vector.txt"

if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
	echo "== 2. PyTorch matrix product with the agent injected"
	d=$w/torch
	mkdir "$d"
	CUDA_INJECTION64_PATH=$agent SONDE_CUDA_DIR=$d python3 -c "
import torch
x = torch.randn(4096, 4096, device='cuda')
print('sum', float((x @ x).sum()))" || bad "the PyTorch program failed"
	for f in "$d"/cuda-*.txt; do
		"$w/wire_check" "$f" || bad "wire_check refused $f"
		grep -q "^K	" "$f" || bad "no kernel recorded in $f"
		grep "^Q" "$f" && bad "a Q line in $f"
		show K 3 "$f"
		cp "$f" "$out/torch.txt"
	done
	echo "== 2b. the same under torch.profiler (what happens is printed, not checked)"
	d=$w/torchprof
	mkdir "$d"
	CUDA_INJECTION64_PATH=$agent SONDE_CUDA_DIR=$d python3 -c "
import torch
from torch.profiler import profile, ProfilerActivity
x = torch.randn(4096, 4096, device='cuda')
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
    y = (x @ x).sum().item()
print('profiler saw', len([e for e in p.events() if e.device_type.name == 'CUDA']), 'CUDA events')" 2>&1 | tail -5
	for f in "$d"/cuda-*.txt; do "$w/wire_check" "$f"; grep "^Q" "$f"; cp "$f" "$out/torchprof.txt"; done
else
	echo "== 2. skipped: no PyTorch with CUDA here"
fi

sonde=${SONDE:-build/sonde}
if [ -x "$sonde" ] && "$sonde" --help >/dev/null 2>&1; then
	echo "== 3. sonde run"
	SONDE_CUDA_AGENT=$agent "$sonde" run -q -o "$w/run" -- "$w/cuda_vector" || bad "sonde run failed"
	python3 - "$w/run/profile.db" <<'PY' || bad "the gpu tables are not as expected"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT * FROM probes WHERE name = 'cuda'").fetchall())
print(db.execute("SELECT * FROM gpu_processes").fetchall())
n = {}
for t in ("gpu_devices", "gpu_kernels", "gpu_copies", "gpu_memsets", "gpu_api", "gpu_syncs", "gpu_memory"):
    n[t] = db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
    print(t, n[t], db.execute(f"SELECT * FROM {t} LIMIT 2").fetchall())
assert n["gpu_kernels"] == 10 and n["gpu_copies"] >= 4 and n["gpu_memsets"] == 1, n
assert db.execute("SELECT count(*) FROM gpu_processes WHERE status = 'ok'").fetchone()[0] == 1
PY
	cp "$w/run/report.md" "$out/report.md" 2>/dev/null
else
	echo "== 3. skipped: no sonde binary that runs here (build it, or set SONDE)"
fi
[ $fail -eq 0 ] && echo "all GPU checks passed" || echo "some GPU checks FAILED"
exit $fail
