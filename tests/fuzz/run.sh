#!/bin/sh
# run.sh CLANG FUZZ_SOURCE OUT_DIR SOURCE_ROOT: builds one libFuzzer target
# (its "sources:" line names the sonde files it needs, a folder ending in /
# for all its C files; an
# optional "libs:" line the libraries, "max_len:" the longest input, and
# "seed:" a shell command run with $CLANG and $CORPUS set that puts seed
# inputs in the corpus) and runs it briefly.
# Exits 77 (skipped) when clang's libFuzzer is not available.
set -eu
clang=$1 src=$2 out=$3 root=$4
name=$(basename "$src" .c)
secs=${SONDE_FUZZ_SECONDS:-10}
mkdir -p "$out"
deps=$(sed -n 's/^ \* sources: \([^*]*\).*/\1/p' "$src" | head -1)
libs=$(sed -n 's/^ \* libs: \([^*]*\).*/\1/p' "$src" | head -1)
max_len=$(sed -n 's/^ \* max_len: \([0-9]*\).*/\1/p' "$src" | head -1)
seed=$(sed -n 's/^ \* seed: \(.*\)$/\1/p' "$src" | head -1)
files=""
for f in $deps; do
	case $f in
	*/) files="$files $root/$f*.c" ;; # a folder: every C file in it
	*) files="$files $root/$f" ;;
	esac
done
# shellcheck disable=SC2086
if ! "$clang" -g -O1 -std=c17 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -I"$root/src" "$src" $files $libs -o "$out/$name" 2>"$out/$name.build.log"; then
	if grep -q "fuzzer" "$out/$name.build.log"; then
		echo "SKIP: clang cannot build libFuzzer targets here (install libclang-rt-14-dev)"
		exit 77
	fi
	cat "$out/$name.build.log"
	exit 1
fi
mkdir -p "$out/$name.corpus"
export SONDE_FUZZ_ROOT="$root"
if [ -n "$seed" ]; then
	CLANG=$clang CORPUS=$out/$name.corpus sh -c "$seed" >"$out/$name.seed.log" 2>&1 ||
		{ cat "$out/$name.seed.log"; exit 1; }
fi
"$out/$name" -max_total_time="$secs" -max_len="${max_len:-4096}" -print_final_stats=0 -artifact_prefix="$out/$name-" "$out/$name.corpus" 2>"$out/$name.log" ||
	{ tail -40 "$out/$name.log"; exit 1; }
echo "fuzzed $name for ${secs}s: no crash, leak or undefined behaviour"
