#!/usr/bin/env bash
# The PostgreSQL store's floor: whole request → approve → consume cycles sent by pgbench,
# which costs next to no CPU itself, straight to the schema's functions (the three durable
# steps, each followed by `wake`, and the one read an approval needs), on a private durable
# cluster. What the database alone costs a cycle on this machine, with no Rust client at all.
#
#   bash tests/benches/pg-floor.sh [seconds] [git-rev]
#
# With a git revision, the same cycles run on a second database of the same cluster made by
# that revision's `db init` (its CLI built from `git archive`, in `target/pg-floor-before`), the
# two taking turns at each number of clients: before and after, same run. With `unchecked`
# instead, the second database is this tree's schema with the checks its steps make for
# authority replaced by no-ops (`pg-unchecked.sql`): what those checks cost. Each line gives
# the busy CPU of the whole machine (every process, whatever else runs) and of the database's
# processes alone (the postmaster and its children, from /proc).
#
# docs/benchmarks.md has the figures. Needs Debian's postgresql (pgbench) and cargo.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-10}
before=${2:-}
dir=$(mktemp -d /tmp/ag-pg-floor.XXXXXX)
src=$(mktemp -d /tmp/ag-pg-floor-src.XXXXXX)
trap 'bash .ci/postgres stop "$dir"; rm -rf "$src"' EXIT
port=54359
url=$(AG_PG_DURABLE=1 bash .ci/postgres start "$dir" "$port")
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
psql=("$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres)
dbs=(floor)
if [[ $before == unchecked ]]; then
  dbs=(unchecked floor)
elif [[ -n $before ]]; then
  git archive --format=tar "$before" | tar -x -C "$src"
  dbs=(before floor)
fi
# The revision's build in a target dir of its own: cargo would take the current build's
# artifacts for it (a workspace's paths are not in their hashes).
target=${CARGO_TARGET_DIR:-$PWD/target}
setup() { # database, source tree, target dir
  "${psql[@]}" -c "CREATE DATABASE $1"
  CARGO_TARGET_DIR=$3 cargo run -q --manifest-path "$2/Cargo.toml" --bin approval-gate -- \
    --store "postgres://postgres@127.0.0.1:$port/$1" db init >&2
  "${psql[@]}" -d "$1" <<'SQL'
-- Caps that never bite: the store's defaults (10 000 live requests) would end a long run.
SELECT approval_gate.set_limits(1000000, 1000000000, NULL);
CREATE FUNCTION public.bench_file(n bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE rid text := lpad(to_hex(n), 12, '0');
BEGIN
  PERFORM approval_gate.file_request(jsonb_build_object('version', 1, 'id', rid,
      'action', 'cycle ' || n, 'reason', 'bench', 'requestedBy', null, 'operation', null,
      'payloadDigest', null, 'createdAt', '2026-12-02T10:00:00.000Z',
      'expiresAt', '2026-12-03T10:00:00.000Z', 'status', 'pending', 'decidedAt', null,
      'decisionReason', null, 'decidedBy', null),
    NULL, '{}'::jsonb, NULL, 1000000, 1000000, false);
  RETURN rid;
END $$;
CREATE FUNCTION public.bench_approve(rid text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE rec jsonb;
BEGIN
  SELECT record INTO rec FROM approval_gate.requests WHERE id = rid;
  PERFORM approval_gate.decide(rid, 'approve', 'approved', rec || jsonb_build_object(
      'status', 'approved', 'decidedAt', '2026-12-02T10:00:00.001Z', 'decidedBy', 'bench'),
    '{"decidedBy":"bench"}'::jsonb, NULL);
END $$;
SQL
}
if [[ $before == unchecked ]]; then
  setup unchecked "$PWD" "$target"
  "${psql[@]}" -d unchecked -f tests/benches/pg-unchecked.sql
elif [[ -n $before ]]; then
  setup before "$src" "$target/pg-floor-before"
fi
setup floor "$PWD" "$target"
script="$dir/cycle.sql"
cat >"$script" <<'PGBENCH'
\set n random(1, 200000000000)
SELECT bench_file(:n);
SELECT approval_gate.wake(lpad(to_hex(:n::bigint), 12, '0'));
SELECT bench_approve(lpad(to_hex(:n::bigint), 12, '0'));
SELECT approval_gate.wake(lpad(to_hex(:n::bigint), 12, '0'));
SELECT approval_gate.claim(lpad(to_hex(:n::bigint), 12, '0'), '{}'::jsonb, NULL);
SELECT approval_gate.wake(lpad(to_hex(:n::bigint), 12, '0'));
PGBENCH
cpu() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
postmaster=$(head -n 1 "$dir/postmaster.pid")
# CPU ticks of the database: the postmaster's own and its reaped children's, and every live child's.
dbcpu() {
  { awk '{print $14+$15+$16+$17}' "/proc/$postmaster/stat"
    for child in $(cat "/proc/$postmaster/task/$postmaster/children"); do
      awk '{print $14+$15}' "/proc/$child/stat" 2>/dev/null || true
    done; } | awk '{s += $1} END {print s}'
}
ticks=$(getconf CLK_TCK)
for clients in 1 4 16; do
  for db in "${dbs[@]}"; do
    before_all=$(cpu)
    before_db=$(dbcpu)
    out=$("$bindir/pgbench" -n -h 127.0.0.1 -p "$port" -U postgres -M prepared -c "$clients" \
      -j 2 -T "$seconds" -f "$script" "$db" 2>&1) || { echo "$out" >&2; exit 1; }
    sleep 0.5 # the backends exit and are reaped: their time is the postmaster's children's
    after_all=$(cpu)
    after_db=$(dbcpu)
    cycles=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
    ms() { awk -v b="$1" -v a="$2" -v c="$cycles" -v t="$ticks" 'BEGIN { printf "%.2f ms", (a - b) / t * 1000 / c }'; }
    label=""
    [[ ${#dbs[@]} == 1 ]] || label="$(case $db in before) echo "before ($before)" ;; unchecked) echo unchecked ;; *) echo after ;; esac): "
    echo "$label$clients clients: $tps cycles/s; busy CPU (all cores, every process) $(
      ms "$before_all" "$after_all") a cycle, of which the database $(ms "$before_db" "$after_db")"
  done
done
for db in "${dbs[@]}"; do
  "${psql[@]}" -d "$db" -tAc "SELECT '$db: claimed ' || count(*) FILTER (WHERE claimed_ms IS NOT NULL) || ' of ' || count(*) FROM approval_gate.requests"
done
