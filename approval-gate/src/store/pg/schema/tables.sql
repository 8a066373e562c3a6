-- The PostgreSQL store's schema, version 5. `approval-gate db init` runs this whole
-- file in one transaction, under a transaction-scoped advisory lock, so running it twice or
-- from two places at once is safe. Tables are created once; functions and grants are replaced
-- every time, so an init with a newer build brings them up to date.
--
-- Authority lives here, not in client code: the three group roles may read, and may write only
-- by calling the SECURITY DEFINER functions below, each of which checks the caller's role
-- (`session_user`, the authenticated login), locks the row it changes, reads the database's
-- clock after the lock, and writes the change and its audit row in the same transaction.

DO $roles$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['approval_gate_agent', 'approval_gate_approver', 'approval_gate_executor'] LOOP
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- another database's init made it at the same moment (roles are global)
            END;
        END IF;
    END LOOP;
END
$roles$;

CREATE SCHEMA IF NOT EXISTS approval_gate;
REVOKE ALL ON SCHEMA approval_gate FROM PUBLIC;

CREATE TABLE IF NOT EXISTS approval_gate.meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- One row a request, live or archived. `record` is the request's JSON record without its
-- payload; `payload` keeps the canonical payload's exact bytes (jsonb would reorder keys and
-- respell numbers, and the approval is bound to those bytes).
CREATE TABLE IF NOT EXISTS approval_gate.requests (
    id          text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{12}$'),
    record      jsonb NOT NULL,
    payload     text,
    status      text NOT NULL,
    created_ms  bigint NOT NULL,
    expires_ms  bigint NOT NULL,
    claimed_ms  bigint,
    started     boolean NOT NULL DEFAULT false,
    executing   boolean NOT NULL DEFAULT false,
    archived    boolean NOT NULL DEFAULT false,
    ask         text NOT NULL
);
CREATE INDEX IF NOT EXISTS requests_pending ON approval_gate.requests (id)
    WHERE status = 'pending' AND NOT archived;
CREATE INDEX IF NOT EXISTS requests_executing ON approval_gate.requests (id) WHERE executing;
-- Identical asks (action, operation, payload digest, requester) among the pending requests.
CREATE INDEX IF NOT EXISTS requests_ask ON approval_gate.requests (ask)
    WHERE status = 'pending' AND NOT archived;

-- The audit chain: each row is one event, appended by the step it records, and sealed into
-- the chain as one line, `{"seq":…,…,"prev":"<hash of the line before>","hash":"<SHA-256 of
-- the line up to its hash>"}`, built and hashed here. Appending takes no lock every writer
-- shares: a row gets its place in the chain (`seq`, `line`) from `seal`, which `wake` runs
-- once the appending transaction has committed (in a transaction of its own that does not
-- wait for the disk), and every read of the chain too. So concurrent steps commit side by
-- side (their WAL flushes shared), not one durable commit after another. Until sealed, a
-- row has its event (`at_ms`, `event`, `id`, `details`) and no line.
CREATE SEQUENCE IF NOT EXISTS approval_gate.audit_pos;
CREATE TABLE IF NOT EXISTS approval_gate.audit (
    pos     bigint PRIMARY KEY DEFAULT nextval('approval_gate.audit_pos'),
    seq     bigint UNIQUE,
    at_ms   bigint NOT NULL,
    id      text NOT NULL,
    event   text NOT NULL,
    details jsonb,
    line    text,
    CHECK ((seq IS NULL) = (line IS NULL))
);
ALTER SEQUENCE approval_gate.audit_pos OWNED BY approval_gate.audit.pos;
-- Only refused decisions are looked up by request (`refuse` keeps one a login, request, step
-- and reason): an index of every row by request cost each append and each seal an entry.
-- Version 1 had that one.
DROP INDEX IF EXISTS approval_gate.audit_by_request;
CREATE INDEX IF NOT EXISTS audit_refused ON approval_gate.audit (id) WHERE event = 'decision_refused';
CREATE INDEX IF NOT EXISTS audit_unsealed ON approval_gate.audit (pos) WHERE seq IS NULL;

-- The head row: the sequence number and hash of the last line, so a cut tail is seen.
CREATE TABLE IF NOT EXISTS approval_gate.audit_head (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    seq  bigint NOT NULL,
    hash text NOT NULL
);
INSERT INTO approval_gate.audit_head (one, seq, hash)
    VALUES (true, 0, '0000000000000000000000000000000000000000000000000000000000000000')
    ON CONFLICT DO NOTHING;
-- When a seal last sealed rows (the database's clock): `wake` seals at most once in
-- {{SEAL_EVERY_MS}} ms, so that many steps a second share one seal. Added by version 3.
ALTER TABLE approval_gate.audit_head
    ADD COLUMN IF NOT EXISTS sealed_at timestamptz NOT NULL DEFAULT '-infinity';

-- Filing slots: a filing holds one (its row lock) until it commits, so at most as many
-- filings as there are slots are ever in flight, and while the queue is far from its caps a
-- filing needs only its own slot: filings commit side by side. Near a cap, a filing locks
-- every slot and counts exactly. `live` counts the requests that are live (not archived), in
-- parts: the creation limit is their sum, so filing never counts rows.
CREATE TABLE IF NOT EXISTS approval_gate.filing_slots (
    slot    int PRIMARY KEY CHECK (slot BETWEEN 0 AND 7),
    live    bigint NOT NULL,
    pending bigint NOT NULL
);
-- `pending` counts the requests filed pending, in parts as `live` does; `settled` (below)
-- counts those decided since, in parts of its own, so that a decision takes no filing slot.
-- Their difference is never below the pending requests not past their expiry (an expired
-- request stays counted until its expiry is recorded): a bound filing needs, without
-- counting rows. Added by version 2, counted once from the rows.
DO $pending$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                   WHERE a.attrelid = 'approval_gate.filing_slots'::regclass
                     AND a.attname = 'pending' AND NOT a.attisdropped) THEN
        ALTER TABLE approval_gate.filing_slots ADD COLUMN pending bigint;
        UPDATE approval_gate.filing_slots
            SET pending = CASE WHEN slot = 0 THEN (SELECT count(*) FROM approval_gate.requests
                                                   WHERE status = 'pending' AND NOT archived) ELSE 0 END;
        ALTER TABLE approval_gate.filing_slots ALTER COLUMN pending SET NOT NULL;
    END IF;
END
$pending$;
INSERT INTO approval_gate.filing_slots (slot, live, pending)
    SELECT s, CASE WHEN s = 0 THEN (SELECT count(*) FROM approval_gate.requests WHERE NOT archived) ELSE 0 END,
           CASE WHEN s = 0 THEN (SELECT count(*) FROM approval_gate.requests
                                 WHERE status = 'pending' AND NOT archived) ELSE 0 END
    FROM generate_series(0, 7) s
    ON CONFLICT DO NOTHING;

-- Pending requests decided (approved, denied, expired), in 8 parts: a decision adds one to
-- a part no other transaction holds.
CREATE TABLE IF NOT EXISTS approval_gate.settled (
    part    int PRIMARY KEY CHECK (part BETWEEN 0 AND 7),
    settled bigint NOT NULL
);
INSERT INTO approval_gate.settled (part, settled)
    SELECT p, 0 FROM generate_series(0, 7) p
    ON CONFLICT DO NOTHING;

-- Version 2 (from 1): filing bounds the pending requests with counters (`pending` in each
-- filing slot's part, `settled` below) instead of counting rows, and a step's audit row is
-- sealed after the step commits (by `wake`, or the next read of the chain), not in it.
-- Version 3 (from 2): `wake` seals at most once in {{SEAL_EVERY_MS}} ms (`audit_head.sealed_at`),
-- and `decide` returns the record it stored.
INSERT INTO approval_gate.meta (key, value) VALUES ('schema_version', '{{SCHEMA_VERSION}}')
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;

-- The store's own limits, set by its owner (`db init` from the operator's settings, or
-- `approval_gate.set_limits`, which audits the change): filing holds every caller to them,
-- whatever caps it passes. A caller may ask for lower caps, never higher ones.
CREATE TABLE IF NOT EXISTS approval_gate.settings (
    key   text PRIMARY KEY CHECK (key IN ('max_pending', 'max_requests')),
    value bigint NOT NULL CHECK (value > 0)
);
INSERT INTO approval_gate.settings (key, value)
    VALUES ('max_pending', {{DEFAULT_MAX_PENDING}}), ('max_requests', {{DEFAULT_MAX_REQUESTS}})
    ON CONFLICT (key) DO NOTHING;

