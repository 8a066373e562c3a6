#!/usr/bin/env bash
# System calls per directory-store operation, counted by strace (issue 42): how many fsyncs,
# opens, writes, renames... one `request_approval`, `approve`, `deny`, `consume` or
# `execute_approved` makes, as a Markdown table for docs/benchmarks.md.
#
#   bash tests/benches/strace-ops.sh [--threads T] [count] [operation...]
#
# count defaults to 200; the operations to file approve deny consume execute; T to 1 (with
# more, T threads of the one process share the count operations, all at once: the
# in-process concurrency that group commit is for; ptrace slows every call, so how the
# threads overlap under strace is not how they overlap without it). For each, the
# release build of tests/src/bin/store-ops.rs sets up a fresh store (under
# APPROVAL_GATE_BENCH_DIR, else the system temp dir) and the requests it needs, then waits;
# strace attaches to every thread of it (`strace -f -p`), and once it is tracing, the
# operation runs count times between two marker look-ups, and strace detaches before the
# process exits. Only the calls between the markers are counted, from every thread (a trace
# rather than `strace -c`, whose summary would also hold the handshake around them; a trace
# without both markers is an error, never a figure). Each cell is calls / count; "other" is
# every call the columns do not name, listed after the table; "of these two, directories"
# counts the fsyncs and fdatasyncs of a directory (new names made durable). The traces stay
# in a temporary directory, named at the end.
#
# Needs strace (/usr/bin/strace) and the right to attach to a process of one's own (root, or
# kernel.yama.ptrace_scope = 0). No network. Not part of CI: a measurement tool.
set -euo pipefail
cd "$(dirname "$0")/../.."
die() { echo "strace-ops: $*" >&2; exit 1; }
command -v strace >/dev/null ||
  die "strace is not installed (apt-get install strace); it is what counts the system calls"
threads=1
if [[ ${1:-} == --threads ]]; then
  threads=${2:-}
  [[ $threads =~ ^[1-9][0-9]*$ ]] || die "--threads takes a positive number, got '$threads'"
  shift 2
fi
count=${1:-200}
[[ $count =~ ^[1-9][0-9]*$ ]] || die "count must be a positive number, got '$count'"
shift || true
ops=("$@")
((${#ops[@]})) || ops=(file approve deny consume execute)

cargo build --release -q -p approval-gate-tests --bin store-ops
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/store-ops
out=$(mktemp -d /tmp/ag-strace-ops.XXXXXX)

# One run of operation $1, traced into $out/$1.trace.
measure() {
  local op=$1 trace=$out/$1.trace line tracer tries=0
  coproc OPS { exec "$bin" "$op" "$count" "$threads"; }
  local pid=$OPS_PID from=${OPS[0]} to=${OPS[1]}
  read -r line <&"$from" || die "store-ops $op ended before it was ready"
  [[ $line == ready ]] || die "store-ops $op said '$line', not ready"
  strace -f -qq -y -s 1024 -o "$trace" -p "$pid" 2>"$trace.err" &
  tracer=$!
  # Tracing has begun once strace has written the call the process is waiting in.
  until grep -q "^$pid " "$trace" 2>/dev/null; do
    ((++tries < 400)) || die "strace is not tracing $pid after 20 s (see $trace.err)"
    sleep 0.05
  done
  echo go >&"$to"
  read -r line <&"$from" || die "store-ops $op failed"
  [[ $line == done ]] || die "store-ops $op said '$line', not done"
  kill -INT "$tracer"
  wait "$tracer" || true
  # Which fsyncs and fdatasyncs were of directories, asked while the store is still there (strace's -y
  # names each descriptor's path).
  between "$trace" | awk '/^(fsync|fdatasync)\(/ && match($0, /<[^>]*>/) {
      print substr($0, RSTART + 1, RLENGTH - 2) }' |
    while read -r path; do if [[ -d $path ]]; then echo "$path"; fi; done | wc -l >"$trace.dirs"
  echo exit >&"$to"
  wait "$pid" || die "store-ops $op exited with $?"
}

# The lines of trace $1 between the markers, without their process ids.
between() {
  awk '
    /strace-ops-counted-part-begins/ { on = 1; begun = 1; next }
    /strace-ops-counted-part-ends/ { on = 0; ended = 1; next }
    on { sub(/^[0-9]+ +/, ""); print }
    END { if (!begun || !ended) { print "strace-ops: a marker is missing in " FILENAME > "/dev/stderr"; exit 1 } }
  ' "$1"
}

# The calls between the markers in trace $1, as "syscall calls" lines.
calls() {
  between "$1" | awk '
    match($0, /^[a-z_0-9]+\(/) { n[substr($0, 1, RLENGTH - 1)]++ }
    END { for (k in n) print k, n[k] }' | sort
}

columns=(fsync fdatasync syncfs openat write rename link unlink mkdir flock stat read close)
# The column a system call is counted in (none: "other").
column_of() {
  case $1 in
  fsync | fdatasync | syncfs | flock | close) echo "$1" ;;
  open | openat | openat2) echo openat ;;
  write | pwrite64 | writev | pwritev | pwritev2) echo write ;;
  rename | renameat | renameat2) echo rename ;;
  link | linkat) echo link ;;
  unlink | unlinkat | rmdir) echo unlink ;;
  mkdir | mkdirat) echo mkdir ;;
  fstat | stat | lstat | newfstatat | statx) echo stat ;;
  read | pread64 | readv | preadv | preadv2) echo read ;;
  esac
}

# calls / count, two decimals at most, trailing zeros dropped.
per_op() {
  awk -v c="$1" -v n="$count" 'BEGIN {
    s = sprintf("%.2f", c / n); sub(/0+$/, "", s); sub(/\.$/, "", s); print s }'
}

header="| operation |"
rule="|---|"
for col in "${columns[@]}"; do
  case $col in
  write) header+=" write, pwrite64 |" ;;
  rename) header+=" rename* |" ;;
  link) header+=" link* |" ;;
  unlink) header+=" unlink*, rmdir |" ;;
  stat) header+=" fstat, statx, newfstatat |" ;;
  read) header+=" read, pread64 |" ;;
  fdatasync) header+=" fdatasync | of these two, directories |" rule+="---|" ;;
  *) header+=" $col |" ;;
  esac
  rule+="---|"
done
header+=" other | total |"
rule+="---|---|"

rows=()
others=()
for op in "${ops[@]}"; do
  echo "strace-ops: $op x $count, $threads thread(s)" >&2
  measure "$op"
  declare -A sum=()
  declare -A other=()
  total=0
  counted=$(calls "$out/$op.trace") || exit 1
  while read -r name n; do
    col=$(column_of "$name")
    total=$((total + n))
    if [[ -n $col ]]; then
      sum[$col]=$((${sum[$col]:-0} + n))
    else
      other[$name]=$n
    fi
  done <<<"$counted"
  row="| \`$op\` |"
  ((threads == 1)) || row="| \`$op\`, $threads threads |"
  for col in "${columns[@]}"; do
    row+=" $(per_op "${sum[$col]:-0}") |"
    if [[ $col == fdatasync ]]; then
      row+=" $(per_op "$(<"$out/$op.trace.dirs")") |"
    fi
  done
  rest=0
  detail=""
  for name in $(printf '%s\n' "${!other[@]}" | sort); do
    rest=$((rest + ${other[$name]}))
    detail+=" $name $(per_op "${other[$name]}"),"
  done
  row+=" $(per_op "$rest") | $(per_op "$total") |"
  rows+=("$row")
  others+=("- \`$op\`:${detail%,}")
  unset sum other
done

echo "$header"
echo "$rule"
printf '%s\n' "${rows[@]}"
echo
echo "Other calls per operation:"
echo
printf '%s\n' "${others[@]}"
echo >&2
echo "strace-ops: the traces are in $out" >&2
