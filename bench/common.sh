# bench/common.sh — sourced by bench/run.sh and bench/ooc_matrix.sh: the benchmark build, the
# gnuplot install and the machine description every results directory starts with.
# The caller sets root (the source tree), build (the build tree) and out (the results
# directory), and defines log().

# bench_build JOBS TARGET...: configures $build (Release, Ninja) if it is not, then builds TARGETs.
bench_build() {
  local jobs=$1
  shift
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$build" -j"$jobs" --target "$@" >/dev/null
}

# ensure_gnuplot: installs gnuplot-nox from Debian when the gnuplot command is missing.
ensure_gnuplot() {
  if ! command -v gnuplot >/dev/null 2>&1; then
    log "installing gnuplot-nox"
    (apt-get install -y gnuplot-nox >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y gnuplot-nox >/dev/null 2>&1; }) ||
      log "WARNING: could not install gnuplot-nox: no plots"
  fi
}

# machine_info SUITE DATASTORE_DIR: writes $out/machine.txt (kernel, CPU, RAM, disk, git, load
# before) and copies it to the log; append "load after" at the end with load_after.
machine_info() {
  local suite=$1 dir=$2
  {
    echo "suite: $suite"
    echo "date: $(date -Is)"
    echo "kernel: $(uname -r)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "ram: $(free -b | awk '/Mem:/ {printf "%.1f GiB", $2/2^30}')"
    echo "disk ($dir): $(df -h "$dir" | awk 'NR==2 {print $1, $2, "size,", $4, "free"}'), fs $(stat -f -c %T "$dir")"
    echo "git: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') (+ uncommitted changes: $(git -C "$root" status --porcelain 2>/dev/null | wc -l) files)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  } >"$out/machine.txt"
  cat "$out/machine.txt" | tee -a "$out/run.log"
}

load_after() {
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
  log "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
