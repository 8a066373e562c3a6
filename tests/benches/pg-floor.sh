#!/usr/bin/env bash
# The PostgreSQL store's floor: whole request → approve → consume cycles sent by pgbench,
# which costs next to no CPU itself, straight to the schema's functions (the three durable
# steps, each followed by `wake`, and the one read an approval needs), on a private durable
# cluster. What the database alone costs a cycle on this machine, with no Rust client at all.
#
#   bash tests/benches/pg-floor.sh [seconds]
#
# docs/benchmarks.md has the figures. Needs Debian's postgresql (pgbench) and cargo.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-10}
dir=$(mktemp -d /tmp/ag-pg-floor.XXXXXX)
trap 'bash .ci/postgres stop "$dir"' EXIT
port=54359
url=$(AG_PG_DURABLE=1 bash .ci/postgres start "$dir" "$port")
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
psql=("$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres)
"${psql[@]}" -c "CREATE DATABASE floor"
cargo run -q -p approval-gate-mcp --bin approval-gate -- \
  --store "postgres://postgres@127.0.0.1:$port/floor" db init >&2
"${psql[@]}" -d floor <<'SQL'
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
for clients in 1 4 16; do
  before=$(cpu)
  out=$("$bindir/pgbench" -n -h 127.0.0.1 -p "$port" -U postgres -M prepared -c "$clients" \
    -j 2 -T "$seconds" -f "$script" floor 2>&1)
  after=$(cpu)
  cycles=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
  tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
  ticks=$(getconf CLK_TCK)
  echo "$clients clients: $tps cycles/s; busy CPU (all cores, every process) $(
    awk -v b="$before" -v a="$after" -v c="$cycles" -v t="$ticks" \
      'BEGIN { printf "%.2f ms", (a - b) / t * 1000 / c }') a cycle"
done
"${psql[@]}" -d floor -tAc "SELECT 'claimed ' || count(*) FILTER (WHERE claimed_ms IS NOT NULL) || ' of ' || count(*) FROM approval_gate.requests"
