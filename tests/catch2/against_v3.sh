#!/usr/bin/env bash
# Builds cudagap's Catch2 suites against Catch2 v3 and runs them (the ctest test "catch2 v3: ...";
# Debian 12, where CI runs, packages v2 only).
#
#   tests/catch2/against_v3.sh --catch2-source DIR --work DIR [--jobs N] [--generator G]
#                              [--main-version V] [--suites "NAME..."] -- <cmake arguments>
#
#   --catch2-source DIR  Catch2 v3's source (../shared/third_party/catch2-3.7.1 beside the
#                        project); when it is absent the check is skipped (exit 77) with the reason
#   --work DIR           where everything goes: DIR/catch2-prefix, Catch2 built and installed
#                        once (a rerun reuses it while the source and the compiler are the same);
#                        DIR/deps, that install bundled by scripts/bundle-deps, which the build
#                        uses, as a GPU host does; DIR/build, cudagap configured with the <cmake
#                        arguments> and Catch2 from DIR/deps, kept between runs (incremental)
#   --jobs N             build and ctest jobs (default 2)
#   --generator G        CMake's generator for both builds (default Ninja)
#   --main-version V     the Catch2 major version of the calling build: with 3 the check is
#                        skipped (exit 77), since that build already runs the suites on v3
#   --suites "NAME..."   the suites of the calling build: each must be built here too, or the
#                        check fails naming the missing ones
#
# Only the Catch2 suites are built (the target cudagap_test_suites: with the examples and the
# benchmarks on, so that their suites are there too, but not their programs), the libraries and
# each suite as unity builds (fewer, larger files: less CPU time), and only their ctest entries
# run (names "<suite>/..."): [gpu] entries are Skipped without a GPU, as in the main build.
set -euo pipefail

say() { printf 'catch2-v3: [%3d s] %s\n' "$SECONDS" "$*" >&2; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source_dir=""
work=""
jobs=2
generator=Ninja
main_version=""
expected_suites=""
while (($#)); do
  case "$1" in
    --catch2-source) source_dir="${2:?--catch2-source needs a folder}"; shift 2 ;;
    --work) work="${2:?--work needs a folder}"; shift 2 ;;
    --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
    --generator) generator="${2:?--generator needs a name}"; shift 2 ;;
    --main-version) main_version="${2:?--main-version needs a number}"; shift 2 ;;
    --suites) expected_suites="${2?--suites needs a list}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) say "unknown argument '$1' (see --help)"; exit 2 ;;
  esac
done
[[ -n "$source_dir" && -n "$work" ]] || { usage >&2; exit 2; }
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { say "--jobs must be a positive number (got '$jobs')"; exit 2; }

if [[ "$main_version" == 3 ]]; then
  echo "SKIPPED: this build runs the suites on Catch2 v3 already"
  exit 77
fi
if [[ ! -f "$source_dir/CMakeLists.txt" ]]; then
  echo "SKIPPED: Catch2 v3's source is not at $source_dir (CI checks out ../shared beside the" \
       "project; see its third_party/README.md), so the tests were not built against Catch2 v3"
  exit 77
fi
source_dir="$(cd "$source_dir" && pwd)"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
cxx="$(sed -n 's/^-DCMAKE_CXX_COMPILER=//p' <<< "$(printf '%s\n' "$@")" | tail -1)"
cxx="${cxx:-c++}"

# Both builds are Release at -O0: what is checked is that the suites compile and pass against
# Catch2 v3, not how fast they run, and -O0 compiles the template-heavy suites in less CPU time
# than -O1 (CI runs this on 2 cores, inside the quick start's 15 minutes).
release_flags="-O0 -DNDEBUG"

# 1. Catch2 v3, built once: the stamp names what it was built from and with.
prefix="$work/catch2-prefix"
catch2_unity="-DCMAKE_UNITY_BUILD=ON"
stamp="source $source_dir, compiler $("$cxx" --version | head -1)"
stamp+=", flags $release_flags $catch2_unity"
if [[ ! -f "$prefix/cudagap-stamp.txt" || "$(cat "$prefix/cudagap-stamp.txt")" != "$stamp" ]]; then
  say "building Catch2 from $source_dir into $prefix"
  rm -rf "$prefix" "$work/catch2-build" "$work/deps"
  # Static, no tests or docs, the compiler's default standard: as distributions build it. As a
  # unity build, which takes half the time (14 s against 32 s here); the suites then run on it.
  cmake -S "$source_dir" -B "$work/catch2-build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_CXX_COMPILER=$cxx" "-DCMAKE_CXX_FLAGS_RELEASE=$release_flags" -DBUILD_TESTING=OFF \
    -DCATCH_INSTALL_DOCS=OFF -DCMAKE_INSTALL_LIBDIR=lib "$catch2_unity" > "$work/catch2.log" 2>&1 &&
    cmake --build "$work/catch2-build" -j "$jobs" >> "$work/catch2.log" 2>&1 &&
    cmake --install "$work/catch2-build" --prefix "$prefix" >> "$work/catch2.log" 2>&1 ||
    { tail -60 "$work/catch2.log"; say "building Catch2 failed (the whole log: $work/catch2.log)"; exit 1; }
  rm -rf "$work/catch2-build"
  printf '%s' "$stamp" > "$prefix/cudagap-stamp.txt"
else
  say "Catch2 in $prefix is up to date"
fi

# 2. Bundled as for a GPU host (scripts/bundle-deps), and the build takes it from there. Once per
#    Catch2 build: a fresh copy of the headers would make the suites compile again.
if [[ ! -f "$work/deps/cudagap-stamp.txt" || "$(cat "$work/deps/cudagap-stamp.txt")" != "$stamp" ]]; then
  say "bundling it with scripts/bundle-deps"
  rm -rf "$work/deps"
  CATCH2_CMAKE_DIR="$prefix/lib/cmake/Catch2" "$root/scripts/bundle-deps" --out "$work/deps" \
    > "$work/bundle-deps.log" 2>&1 || { cat "$work/bundle-deps.log"; exit 1; }
  printf '%s' "$stamp" > "$work/deps/cudagap-stamp.txt"
fi
say "bundled: $(grep '^Catch2 ' "$work/deps/MANIFEST.txt")"
catch2_dir="$work/deps/lib/cmake/Catch2"

# 3. cudagap's Catch2 suites against it.
build="$work/build"
say "configuring $build"
cmake -S "$root" -B "$build" -G "$generator" "$@" "-DCMAKE_CXX_FLAGS_RELEASE=$release_flags" \
  -DCUDAGAP_BUILD_TESTS=ON -DCUDAGAP_BUILD_EXAMPLES=ON \
  -DCUDAGAP_BUILD_BENCH=ON -DCUDAGAP_BUILD_DOCS=OFF -DCUDAGAP_CATCH2_VERSION=3 \
  -DCMAKE_UNITY_BUILD=ON \
  "-DCatch2_DIR=$catch2_dir" > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; say "configuring failed"; exit 1; }
found="$(sed -n 's/^-- cudagap: tests with //p' "$work/configure.log")"
say "tests with ${found:-an unknown Catch2}"
[[ "$found" == "Catch2 3."*" at $catch2_dir" ]] ||
  { say "the build did not take Catch2 v3 from $catch2_dir"; exit 1; }
say "building the suites (-j $jobs)"
cmake --build "$build" --target cudagap_test_suites -j "$jobs" > "$work/build.log" 2>&1 ||
  { tail -60 "$work/build.log"; say "building the suites failed (the whole log: $work/build.log)"; exit 1; }

suites=()
for program in "$build"/tests/*/cudagap_*_tests; do
  name="${program##*/cudagap_}"
  suites+=("${name%_tests}")
done
((${#suites[@]})) || { say "no suite was built in $build/tests"; exit 1; }
absent=()
for name in $expected_suites; do
  [[ " ${suites[*]} " == *" $name "* ]] || absent+=("$name")
done
((${#absent[@]} == 0)) ||
  { say "the calling build's suites ${absent[*]} were not built against Catch2 v3 in $build"; exit 1; }
regex="^($(IFS='|'; echo "${suites[*]}"))/"
identify="$("$build/tests/core/cudagap_core_tests" --libidentify | sed -n 's/^version: *//p')"
say "running the suites ${suites[*]} (Catch2 ${identify:-?} linked)"
[[ "$identify" == 3.* ]] || { say "cudagap_core_tests is not linked with Catch2 v3"; exit 1; }
ctest --test-dir "$build" -R "$regex" -j "$jobs" --output-on-failure --timeout 300
