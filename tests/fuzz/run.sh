#!/usr/bin/env bash
# Build the libFuzzer targets of tests/fuzz and run each for a bounded time.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 30); TARGETs default to all of them.  Builds
# in build/fuzz (COLFILE_FUZZ_BUILD overrides) with clang, libFuzzer,
# AddressSanitizer (with LeakSanitizer) and UBSan; the corpus lives in
# build/fuzz/corpus/<target> (seeds from the fixtures and tests/fuzz/seeds,
# plus what earlier runs found), so the source tree is never written.
# Without a clang that has libFuzzer, installs clang with apt-get when run
# as root, else says SKIP loudly and exits 0.  Exits non-zero when a target
# crashes, leaks, hangs or breaks an invariant, after printing the
# reproducer.  One fuzzer runs at a time.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${COLFILE_FUZZ_BUILD:-$root/build/fuzz}
fixtures=${CF_FIXTURES_DIR:-$root/../shared/fixtures}
all_targets=(header dtype attr_v2 attr_v1 colfile_attrs ext stats meta pending convert)

seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
case $seconds in
''|*[!0-9]*) echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac

skip() {
    echo "########################################################################"
    echo "## SKIP: fuzzing NOT RUN: $*"
    echo "########################################################################"
    exit 0
}

# A C compiler that links a libFuzzer + ASan + UBSan program.
works() {
    local tmp rc
    tmp=$(mktemp -d) || return 1
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' > "$tmp/t.c"
    "$1" -fsanitize=fuzzer,address,undefined "$tmp/t.c" -o "$tmp/t" > /dev/null 2>&1
    rc=$?
    rm -rf "$tmp"
    return $rc
}

find_clang() {
    local cc
    for cc in ${CC_FUZZ:-} clang $(compgen -c clang- 2>/dev/null | grep -E '^clang-[0-9]+$' | sort -t- -k2 -rn | uniq); do
        if command -v "$cc" > /dev/null 2>&1 && works "$cc"; then
            command -v "$cc"
            return 0
        fi
    done
    return 1
}

cc=$(find_clang)
if [ -z "$cc" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null 2>&1; then
        echo "fuzz: no clang with libFuzzer; installing clang with apt-get"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y --no-install-recommends clang > /dev/null 2>&1 ||
            { apt-get update > /dev/null 2>&1 && apt-get install -y --no-install-recommends clang > /dev/null 2>&1; } ||
            skip "apt-get could not install clang"
        # libFuzzer and the sanitizer runtimes are only recommended by clang.
        major=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
        cc=$(find_clang)
        if [ -z "$cc" ] && [ -n "$major" ]; then
            apt-get install -y --no-install-recommends "libclang-rt-$major-dev" > /dev/null 2>&1 ||
                apt-get install -y --no-install-recommends "libclang-common-$major-dev" > /dev/null 2>&1
            cc=$(find_clang)
        fi
        [ -n "$cc" ] || skip "clang was installed but cannot link -fsanitize=fuzzer,address,undefined"
    else
        skip "no clang with libFuzzer (-fsanitize=fuzzer) found, and not root with apt-get to install one"
    fi
fi
echo "fuzz: compiler $cc ($("$cc" --version | head -1))"

jobs=2
mkdir -p "$build"
log=$build/build.log
if ! cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLFILE_FUZZ=ON \
        -DCOLFILE_BUILD_TESTS=OFF -DCOLFILE_MPI=OFF > "$log" 2>&1 ||
   ! cmake --build "$build" --target colfile_fuzz -j "$jobs" >> "$log" 2>&1; then
    cat "$log"
    echo "fuzz: FAILED to build the fuzz targets"
    exit 1
fi
bin=$build/tests/fuzz

# The corpus: seeds computed from the fixtures, then the committed seeds.
corpus=$build/corpus
mkdir -p "$corpus"
if [ -d "$fixtures" ]; then
    "$bin/colfile_fuzz_seedgen" "$fixtures" "$corpus" || { echo "fuzz: seedgen failed"; exit 1; }
else
    echo "fuzz: no fixtures at $fixtures: committed seeds only"
fi
for t in "${all_targets[@]}"; do
    mkdir -p "$corpus/$t"
    [ -d "$here/seeds/$t" ] && cp "$here/seeds/$t"/* "$corpus/$t/" 2> /dev/null
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build/artifacts" "$build/logs"
failed=()
total=0
printf '%-14s %8s %14s %10s  %s\n' target seconds executions corpus result
for t in "${targets[@]}"; do
    if [ ! -x "$bin/fuzz_$t" ]; then
        echo "fuzz: unknown target '$t' (targets: ${all_targets[*]})"
        exit 2
    fi
    tlog=$build/logs/$t.log
    start=$(date +%s)
    "$bin/fuzz_$t" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$build/artifacts/$t-" "$corpus/$t" > "$tlog" 2>&1
    rc=$?
    elapsed=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tlog" | tail -1)
    execs=${execs:-0}
    total=$((total + execs))
    size=$(ls "$corpus/$t" | wc -l)
    if [ $rc -eq 0 ]; then
        printf '%-14s %8s %14s %10s  %s\n' "$t" "$elapsed" "$execs" "$size" ok
    else
        printf '%-14s %8s %14s %10s  %s\n' "$t" "$elapsed" "$execs" "$size" "FAILED (exit $rc)"
        failed+=("$t")
        echo "---- $t: end of $tlog"
        tail -n 60 "$tlog"
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$tlog" | tail -1)
        if [ -n "$artifact" ]; then
            echo "---- reproducer: $artifact"
            od -A d -c "$artifact" | head -n 20
            echo "---- reproduce with: $bin/fuzz_$t $artifact"
        fi
        echo "----"
    fi
done
if [ ${#failed[@]} -eq 0 ]; then
    echo "fuzz: OK: ${#targets[@]} targets, ${seconds}s each, $total executions, no crash, leak, hang or sanitizer report"
    exit 0
fi
echo "fuzz: FAILED: ${failed[*]} ($total executions in all)"
exit 1
