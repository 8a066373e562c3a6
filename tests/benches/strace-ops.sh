#!/usr/bin/env bash
# System calls per directory-store operation, counted by `strace -c` (issue 42): how many
# fsyncs, opens, writes, renames... one `request_approval`, `approve`, `deny`, `consume` or
# `execute_approved` makes, as a Markdown table for docs/benchmarks.md.
#
#   bash tests/benches/strace-ops.sh [count] [operation...]
#
# count defaults to 200; the operations to file approve deny consume execute. For each, the
# release build of tests/src/bin/store-ops.rs sets up a fresh store (under
# APPROVAL_GATE_BENCH_DIR, else the system temp dir) and the requests it needs, untimed, then
# waits; strace attaches to every thread of it (`-f -p`), the operation runs count times, and
# strace detaches before the process exits. A second run of count 0 counts the handshake's own
# calls (a read and a write), which are taken off. Each cell is calls / count over the
# operations' threads; "other" is every call the columns do not name, listed after the table.
#
# Needs strace (/usr/bin/strace) and the right to attach to a process of one's own (root, or
# kernel.yama.ptrace_scope = 0). No network. Not part of CI: a measurement tool.
set -euo pipefail
cd "$(dirname "$0")/../.."
die() { echo "strace-ops: $*" >&2; exit 1; }
command -v strace >/dev/null ||
  die "strace is not installed (apt-get install strace); it is what counts the system calls"
count=${1:-200}
[[ $count =~ ^[1-9][0-9]*$ ]] || die "count must be a positive number, got '$count'"
shift || true
ops=("$@")
((${#ops[@]})) || ops=(file approve deny consume execute)

cargo build --release -q -p approval-gate-tests --bin store-ops
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/store-ops
out=$(mktemp -d /tmp/ag-strace-ops.XXXXXX)

# Every thread of process $1 traced by process $2.
traced() {
  local status
  for status in /proc/"$1"/task/*/status; do
    grep -q "^TracerPid:[[:space:]]*$2\$" "$status" 2>/dev/null || return 1
  done
}

# One run: operation $1, count $2; strace's summary in $out/$1.$2.
measure() {
  local op=$1 n=$2 line tracer tries=0
  coproc OPS { exec "$bin" "$op" "$n"; }
  local pid=$OPS_PID
  local from=${OPS[0]} to=${OPS[1]}
  read -r line <&"$from" || die "store-ops $op $n ended before it was ready"
  [[ $line == ready ]] || die "store-ops $op $n said '$line', not ready"
  strace -c -f -q -o "$out/$op.$n" -p "$pid" 2>"$out/$op.$n.err" &
  tracer=$!
  until traced "$pid" "$tracer"; do
    ((++tries < 200)) || die "strace did not attach to $pid (see $out/$op.$n.err)"
    sleep 0.05
  done
  echo go >&"$to"
  read -r line <&"$from" || die "store-ops $op $n failed"
  [[ $line == done ]] || die "store-ops $op $n said '$line', not done"
  kill -INT "$tracer"
  wait "$tracer" || true
  echo exit >&"$to"
  wait "$pid" || die "store-ops $op $n exited with $?"
}

# strace -c's table as "syscall calls" lines.
calls() {
  awk '$1 !~ /^(%|-)/ && NF >= 5 && $NF != "total" { print $NF, $4 }' "$1"
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
  *) header+=" $col |" ;;
  esac
  rule+="---|"
done
header+=" other | total |"
rule+="---|---|"

rows=()
others=()
for op in "${ops[@]}"; do
  echo "strace-ops: $op x $count" >&2
  measure "$op" 0
  measure "$op" "$count"
  declare -A sum=()
  declare -A other=()
  total=0
  # The run's calls less the handshake's (the run of count 0).
  while read -r name n; do
    col=$(column_of "$name")
    total=$((total + n))
    if [[ -n $col ]]; then
      sum[$col]=$((${sum[$col]:-0} + n))
    elif ((n != 0)); then
      other[$name]=$n
    fi
  done < <(
    { calls "$out/$op.$count"; calls "$out/$op.0" | awk '{ print $1, -$2 }'; } |
      awk '{ s[$1] += $2 } END { for (k in s) print k, s[k] }' | sort
  )
  row="| \`$op\` |"
  for col in "${columns[@]}"; do
    row+=" $(per_op "${sum[$col]:-0}") |"
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
echo "strace-ops: strace's own summaries are in $out" >&2
