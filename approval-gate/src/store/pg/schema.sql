-- The PostgreSQL store's schema, version 4. `approval-gate db init` runs this whole
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

-- ------------------------------------------------------------------------------- helpers

-- Whether the session is a superuser: its given clock and name are taken as they come (a
-- superuser can rewrite every table anyway; the conformance suite drives time by hand).
CREATE OR REPLACE FUNCTION approval_gate.trusted() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce((SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = session_user), false)
$$;

-- Now, in milliseconds: the database's clock (read when called: after the caller's locks),
-- or a superuser's given time.
CREATE OR REPLACE FUNCTION approval_gate.now_ms(given bigint) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN given IS NOT NULL AND approval_gate.trusted() THEN given
                ELSE floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint END
$$;

-- Who decides: the authenticated session user, or a superuser's given name.
CREATE OR REPLACE FUNCTION approval_gate.who(given text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN given IS NOT NULL AND approval_gate.trusted() THEN given
                ELSE session_user::text END
$$;

-- The small helpers below are plain SQL expressions with no `SET` clause, so that the planner
-- inlines them into the steps that call them (a `SET` would make each call a function call
-- that saves and restores the setting: tens of microseconds, many times a step). Only the
-- schema's own functions may execute them, and each of those runs with its search_path
-- fixed to `pg_catalog, pg_temp`, which the inlined expression then resolves in.

-- RFC 3339 in UTC with milliseconds, as the library writes timestamps.
CREATE OR REPLACE FUNCTION approval_gate.ts_text(ms bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT to_char((timestamptz 'epoch' + ms * interval '1 millisecond') AT TIME ZONE 'UTC',
                   'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

CREATE OR REPLACE FUNCTION approval_gate.ms_of(ts text) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT floor(extract(epoch FROM ts::timestamptz) * 1000)::bigint
$$;

-- Refuses unless the session user holds one of `roles` by grants this store trusts: every
-- membership on the way granted by a superuser or by this schema's owner (the store's owner).
-- The group roles are the cluster's, not the database's: a grant made by anyone else (the
-- owner of another team's store, who may create roles) counts in that one's store, never
-- here, and a login as a group role itself holds nothing. PostgreSQL 16 gives the creator of
-- a role ADMIN OPTION on it without INHERIT or SET: a grant that lets it grant, not act, so
-- it does not count either. The usual answers come first and cheap: a superuser, then a
-- trusted grant straight from the login to a group role, then the grants through other roles.
-- Returns whether the session is a superuser's (`trusted`): its given clock and name are
-- taken as they come, so a step needs no second look at the catalog.
DO $drop$
BEGIN
    IF to_regprocedure('approval_gate.require(text, text[])') IS NOT NULL
       AND (SELECT p.prorettype FROM pg_catalog.pg_proc p
            WHERE p.oid = to_regprocedure('approval_gate.require(text, text[])')) = 'void'::regtype THEN
        DROP FUNCTION approval_gate.require(text, text[]); -- version 1's, which returned nothing
    END IF;
END
$drop$;
CREATE OR REPLACE FUNCTION approval_gate.require(what text, roles text[]) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_me oid := session_user::regrole::oid;
    v_groups oid[];
    v_owner oid;
BEGIN
    IF (SELECT a.rolsuper FROM pg_roles a WHERE a.oid = v_me) THEN
        RETURN true;
    END IF;
    v_groups := roles::regrole[]::oid[];
    v_owner := (SELECT n.nspowner FROM pg_namespace n WHERE n.nspname = 'approval_gate');
    IF EXISTS (SELECT FROM pg_auth_members m
               WHERE m.member = v_me AND m.roleid = ANY (v_groups)
                 AND (m.grantor = v_owner OR (SELECT a.rolsuper FROM pg_roles a WHERE a.oid = m.grantor))
                 AND coalesce((to_jsonb(m)->>'inherit_option')::boolean
                              OR (to_jsonb(m)->>'set_option')::boolean, true))
       OR EXISTS (
           WITH RECURSIVE
           edge AS (
               SELECT m.roleid, m.member FROM pg_auth_members m
               WHERE (m.grantor = v_owner
                      OR m.grantor IN (SELECT a.oid FROM pg_roles a WHERE a.rolsuper))
                 AND coalesce((to_jsonb(m)->>'inherit_option')::boolean
                              OR (to_jsonb(m)->>'set_option')::boolean, true)),
           held(oid) AS (
               SELECT e.roleid FROM edge e WHERE e.member = v_me
               UNION
               SELECT e.roleid FROM held h JOIN edge e ON e.member = h.oid)
           SELECT FROM held h WHERE h.oid = ANY (v_groups)) THEN
        RETURN false;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'AG004',
        MESSAGE = format('%s is not permitted to %s', session_user, what),
        DETAIL = format('it needs one of the roles %s, granted by a superuser or by the store''s owner',
                        array_to_string(roles, ', '));
END
$$;

-- Takes one of the store's session advisory locks for the calling session, which may not take
-- advisory locks itself (`db init` revokes the functions from PUBLIC: a session taking tens of
-- thousands fills the cluster's shared lock table). A session holds at most one: taking one
-- lets go of any it held (the library's sessions hold one each, on connections of their
-- own). Only a class its role uses: 1095192400 a request's decisions and consume (every
-- role), 1095192401 a running execution (executors), 1095192402 filing (agents), 1095192405
-- the passkeys' signature counters while an approval is checked and written (approvers; added
-- by version 4). Its wait is bounded by the session's `lock_timeout`.
CREATE OR REPLACE FUNCTION approval_gate.hold(class int, key text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- A lock authorizes nothing (each step checks its role with `require`): PostgreSQL's
    -- own membership is check enough here, and cheaper. The counters' lock is taken only to
    -- approve: anyone else is refused as the step would refuse them.
    IF class = 1095192405 AND NOT pg_has_role(session_user, 'approval_gate_approver', 'MEMBER') THEN
        RAISE EXCEPTION USING ERRCODE = 'AG004',
            MESSAGE = format('%s is not permitted to approve', session_user),
            DETAIL = 'it needs the role approval_gate_approver, granted by a superuser or by the store''s owner';
    END IF;
    IF NOT (CASE class
        WHEN 1095192400 THEN true
        WHEN 1095192401 THEN pg_has_role(session_user, 'approval_gate_executor', 'MEMBER')
        WHEN 1095192402 THEN pg_has_role(session_user, 'approval_gate_agent', 'MEMBER')
        WHEN 1095192405 THEN pg_has_role(session_user, 'approval_gate_approver', 'MEMBER')
        ELSE false
    END) THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005',
            MESSAGE = format('%s is not a lock of this store for %s', class, session_user);
    END IF;
    PERFORM pg_advisory_unlock_all();
    PERFORM pg_advisory_lock(class, hashtext(key));
END
$$;

-- Seals every committed unsealed row into the chain, in the order they were appended, and
-- returns how many. With `wait` false it gives way at once to a sealer already at work (that
-- one, or the next, seals what is left); with `wait` true it waits for it (a read of the
-- chain). Nothing is sealed onto a chain that does not end where its head row says: the
-- last line is there, hashes to the head's hash, and nothing follows it.
--
-- The order is safe for every request: its steps lock its row, so a later step's row is
-- appended only after the earlier one committed, and any seal that sees the later row sees
-- the earlier one, with a smaller `pos`.
CREATE OR REPLACE FUNCTION approval_gate.seal(wait boolean) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_seq bigint;
    v_prev text;
    v_text text;
    v_fields jsonb;
    v_prefix text;
    v_hash text;
    v_sealed bigint := 0;
    v_last bigint;
    r record;
BEGIN
    -- The head row, locked only if there is something to seal (the test runs first, once).
    IF wait THEN
        SELECT h.seq, h.hash INTO v_seq, v_prev FROM approval_gate.audit_head h
            WHERE h.one AND EXISTS (SELECT FROM approval_gate.audit a WHERE a.seq IS NULL) FOR UPDATE;
    ELSE
        SELECT h.seq, h.hash INTO v_seq, v_prev FROM approval_gate.audit_head h
            WHERE h.one AND EXISTS (SELECT FROM approval_gate.audit a WHERE a.seq IS NULL)
            FOR UPDATE SKIP LOCKED;
    END IF;
    IF NOT FOUND THEN
        RETURN 0; -- nothing to seal, or (without `wait`) another sealer at work
    END IF;
    -- The line the head row names and the chain's last line number, in one statement.
    SELECT (SELECT a.line FROM approval_gate.audit a WHERE a.seq = v_seq),
           (SELECT max(a.seq) FROM approval_gate.audit a)
        INTO v_text, v_last;
    IF v_seq > 0 THEN
        IF v_text IS NULL
           OR encode(sha256(convert_to(left(v_text, length(v_text) - 75), 'UTF8')), 'hex') <> v_prev
           OR right(v_text, 66) <> v_prev || '"}' THEN
            RAISE EXCEPTION USING ERRCODE = 'AG007', HINT = v_seq::text, MESSAGE = CASE
                WHEN v_text IS NULL THEN 'missing: the head row names a line the chain does not have (its tail was cut)'
                ELSE 'altered: the line does not match the hash in the head row' END;
        END IF;
    END IF;
    IF v_last > v_seq THEN
        RAISE EXCEPTION USING ERRCODE = 'AG007', HINT = (v_seq + 1)::text,
            MESSAGE = 'lines past the head row: they were added by hand';
    END IF;
    FOR r IN SELECT a.pos, a.at_ms, a.event, a.id, a.details FROM approval_gate.audit a
             WHERE a.seq IS NULL ORDER BY a.pos LOOP
        v_seq := v_seq + 1;
        v_fields := coalesce(r.details, '{}'::jsonb) - ARRAY['seq', 'ts', 'event', 'id', 'prev', 'hash'];
        v_text := v_fields::text;
        v_prefix := '{"seq":' || v_seq
            || ',"ts":' || to_json(approval_gate.ts_text(r.at_ms))::text
            || ',"event":' || to_json(r.event)::text
            || ',"id":' || to_json(r.id)::text
            || CASE WHEN v_fields = '{}'::jsonb THEN '' ELSE ',' || substr(v_text, 2, length(v_text) - 2) END
            || ',"prev":"' || v_prev || '"';
        v_hash := encode(sha256(convert_to(v_prefix, 'UTF8')), 'hex');
        UPDATE approval_gate.audit
            SET seq = v_seq, line = v_prefix || ',"hash":"' || v_hash || '"}', details = NULL
            WHERE pos = r.pos;
        v_prev := v_hash;
        v_sealed := v_sealed + 1;
    END LOOP;
    IF v_sealed > 0 THEN
        UPDATE approval_gate.audit_head SET seq = v_seq, hash = v_prev, sealed_at = clock_timestamp()
            WHERE one;
    END IF;
    RETURN v_sealed;
END
$$;

-- Appends the audit row of one step on request `rid`, in the step's transaction; returns
-- its position. It is sealed into the chain once the step has committed, by `wake` (which
-- the client runs then) or the next seal. Nothing is appended to a chain that does not end
-- where its head row says (the checks `seal` makes, read in one snapshot, without the head
-- row's lock): the step rolls back whole. Waiters are woken by the client once the step has
-- committed (NOTIFY would serialise every commit).
CREATE OR REPLACE FUNCTION approval_gate.append(at_ms bigint, event text, rid text, details jsonb)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_pos bigint;
    v_seq bigint;
    v_hash text;
    v_line text;
    v_last bigint;
    v_problem text;
BEGIN
    -- One snapshot: the head row, the line it names and the chain's last line number, each
    -- an index lookup whatever the planner thinks of the tables.
    SELECT h.seq, h.hash,
           (SELECT a.line FROM approval_gate.audit a WHERE a.seq = h.seq),
           (SELECT max(b.seq) FROM approval_gate.audit b)
        INTO v_seq, v_hash, v_line, v_last
        FROM approval_gate.audit_head h WHERE h.one;
    v_problem := CASE
        WHEN v_seq > 0 AND v_line IS NULL
            THEN 'missing: the head row names a line the chain does not have (its tail was cut)'
        WHEN v_seq > 0 AND (right(v_line, 66) <> v_hash || '"}' OR
                            encode(sha256(convert_to(left(v_line, length(v_line) - 75), 'UTF8')), 'hex') <> v_hash)
            THEN 'altered: the line does not match the hash in the head row'
        WHEN v_last > v_seq
            THEN 'lines past the head row: they were added by hand'
    END;
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'AG007', MESSAGE = v_problem,
            HINT = CASE WHEN v_problem LIKE 'lines past%' THEN v_seq + 1 ELSE v_seq END::text;
    END IF;
    INSERT INTO approval_gate.audit (at_ms, id, event, details)
        VALUES (at_ms, rid, event, approval_gate.clean_details(details))
        RETURNING pos INTO v_pos;
    RETURN v_pos;
END
$$;

-- Run by the client once a step has committed: seals what it can (the step's row, and any
-- committed before it that no seal has reached) and wakes the waiters on
-- `rid` (every listener re-reads; the payload is a hint). Its own transaction commits without
-- waiting for the disk: a lost seal is sealed again by the next one, a lost wake-up is covered
-- by the waiters' fallback timer, and NOTIFY in a durable step would make every step's commit
-- wait for the one before it.
--
-- It seals only if no seal sealed rows in the last {{SEAL_EVERY_MS}} ms: at a person's pace every
-- step is sealed by its own wake, and at hundreds of steps a second one seal takes the rows
-- of many (each seal locks the head row and checks the chain's end before it seals). A row
-- left for the next wake is sealed by it, or by the next read of the chain, which seals
-- everything committed before it reads.
CREATE OR REPLACE FUNCTION approval_gate.wake(rid text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    IF EXISTS (SELECT FROM approval_gate.audit_head h
               WHERE h.one AND h.sealed_at < clock_timestamp() - interval '{{SEAL_EVERY_MS}} milliseconds') THEN
        PERFORM approval_gate.seal(false);
    END IF;
    PERFORM pg_notify('approval_gate', rid);
END
$$;

-- The live row of `rid`, locked; refuses a missing or archived one.
CREATE OR REPLACE FUNCTION approval_gate.locked(rid text) RETURNS approval_gate.requests
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r approval_gate.requests;
BEGIN
    SELECT * INTO r FROM approval_gate.requests WHERE id = rid FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'AG003', MESSAGE = format('request %s not found', rid);
    END IF;
    IF r.archived THEN
        RAISE EXCEPTION USING ERRCODE = 'AG006', MESSAGE = format('request %s is archived', rid);
    END IF;
    RETURN r;
END
$$;

CREATE OR REPLACE FUNCTION approval_gate.wrong_state(what text, rid text, status text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'AG001',
        MESSAGE = format('cannot %s request %s: it is %s', what, rid, status);
END
$$;

-- The bounds below in double braces are the library's own (`approval_gate::limits`), written
-- in when `db init` installs this file: one source of truth for what the library reads back.

-- One of the store's limits; refuses if the owner's settings lack it (fail closed).
CREATE OR REPLACE FUNCTION approval_gate.setting(name text) RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v bigint;
BEGIN
    SELECT s.value INTO v FROM approval_gate.settings s WHERE s.key = name;
    IF v IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'AG012',
            MESSAGE = format('the store has no %s setting: its owner runs `approval-gate db init`', name);
    END IF;
    RETURN v;
END
$$;

-- Whether `v` is a timestamp as the library writes it (RFC 3339, UTC, milliseconds, 1970 to
-- 9999). A date that matches but does not exist (February 31st) fails the cast in
-- `check_record`'s `ms_of`: refused all the same.
CREATE OR REPLACE FUNCTION approval_gate.is_ts(v jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(jsonb_typeof(v) = 'string'
        AND (v #>> '{}') ~ '^(19[7-9][0-9]|[2-9][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z$', false)
$$;

-- Whether `v` is a string of at most `max` bytes (NULL allowed when `nullable`).
CREATE OR REPLACE FUNCTION approval_gate.is_text(v jsonb, max int, nullable boolean) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN v IS NULL OR v = 'null'::jsonb THEN nullable
                ELSE jsonb_typeof(v) = 'string' AND octet_length(v #>> '{}') <= max END
$$;

-- What is wrong with a record's decision (its status, decision time, decider, reason and
-- approvals), or NULL: the fields a decision may change, so all `decide` must check of a
-- record whose other fields are the filed ones.
CREATE OR REPLACE FUNCTION approval_gate.decision_problem(rec jsonb) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_problem text;
    a jsonb;
BEGIN
    v_problem := CASE
        WHEN jsonb_typeof(rec->'status') IS DISTINCT FROM 'string'
             OR rec->>'status' NOT IN ('pending', 'approved', 'denied', 'expired', 'revoked')
            THEN 'status is not one of pending, approved, denied, expired, revoked'
        WHEN coalesce(rec->'decidedAt', 'null'::jsonb) <> 'null'::jsonb AND NOT approval_gate.is_ts(rec->'decidedAt')
            THEN 'decidedAt is not an RFC 3339 time in milliseconds'
        WHEN (coalesce(rec->'decidedAt', 'null'::jsonb) = 'null'::jsonb) <> (rec->>'status' = 'pending')
            THEN 'its status disagrees with its decision time'
        WHEN NOT approval_gate.is_text(rec->'decidedBy', {{MAX_NAME_BYTES}}, true)
            THEN 'decidedBy is not a text of at most {{MAX_NAME_BYTES}} bytes'
        WHEN NOT approval_gate.is_text(rec->'decisionReason', {{MAX_REASON_BYTES}}, true)
            THEN 'decisionReason is not a text of at most {{MAX_REASON_BYTES}} bytes'
        WHEN rec ? 'approvals' AND CASE
                WHEN jsonb_typeof(rec->'approvals') = 'array'
                    THEN jsonb_array_length(rec->'approvals') > {{MAX_QUORUM}}
                ELSE true END
            THEN 'approvals is not a list of at most {{MAX_QUORUM}}'
    END;
    IF v_problem IS NULL AND rec ? 'approvals' THEN
        FOR a IN SELECT e FROM jsonb_array_elements(rec->'approvals') e LOOP
            IF jsonb_typeof(a) IS DISTINCT FROM 'object'
               OR (SELECT array_agg(k ORDER BY k COLLATE "C") FROM jsonb_object_keys(
                      CASE WHEN jsonb_typeof(a) = 'object' THEN a ELSE '{}'::jsonb END) k)
                  IS DISTINCT FROM ARRAY['decidedAt', 'decidedBy', 'principal', 'signature']
               OR NOT approval_gate.is_text(a->'principal', {{MAX_NAME_BYTES}}, false)
               OR NOT approval_gate.is_text(a->'decidedBy', {{MAX_NAME_BYTES}}, false)
               OR NOT approval_gate.is_ts(a->'decidedAt')
               OR NOT approval_gate.is_text(a->'signature', {{MAX_SIGNATURE_BYTES}}, false) THEN
                RETURN 'an approval is not {principal, decidedBy, decidedAt, signature} within their limits';
            END IF;
        END LOOP;
    END IF;
    RETURN v_problem;
END
$$;

-- Refuses (AG011) a record of request `rid` that the library could not read back, or that
-- holds more than it ever writes: unknown keys, wrong types, another or a malformed id,
-- oversize fields, a status that disagrees with its decision time. What only the library
-- can check (the payload's canonical form and its BLAKE3 digest) it checks on every read,
-- and a record failing it is refused as unreadable there. With `decision_only`, only the
-- fields a decision may change (`decision_problem`): `decide` has already proved the rest
-- are the ones filed, which passed this check whole.
DROP FUNCTION IF EXISTS approval_gate.check_record(jsonb, text, text);
CREATE OR REPLACE FUNCTION approval_gate.check_record(rec jsonb, rid text, payload text,
                                                      decision_only boolean) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_problem text;
    v_key text;
BEGIN
    IF jsonb_typeof(rec) IS DISTINCT FROM 'object' THEN
        v_problem := 'it is not a JSON object';
    ELSIF NOT decision_only THEN
        SELECT k INTO v_key FROM jsonb_object_keys(rec) k
            WHERE k <> ALL (ARRAY['version', 'id', 'action', 'reason', 'requestedBy', 'operation',
                'payloadDigest', 'createdAt', 'expiresAt', 'status', 'decidedAt', 'decisionReason',
                'decidedBy', 'requiredApprovals', 'approvals', 'filedBy'])
            LIMIT 1;
        v_problem := CASE
            WHEN v_key IS NOT NULL THEN format('unknown field %s', to_json(left(v_key, 64)))
            WHEN (rec->'version')::text IS DISTINCT FROM '{{FORMAT_VERSION}}'
                THEN 'version is not {{FORMAT_VERSION}}'
            WHEN jsonb_typeof(rec->'id') IS DISTINCT FROM 'string' OR rec->>'id' !~ '^[0-9a-f]{12}$'
                 OR rec->>'id' = '000000000000' OR rec->>'id' IS DISTINCT FROM rid
                THEN 'id is not the request''s: 12 lowercase hex characters'
            WHEN NOT approval_gate.is_text(rec->'action', {{MAX_ACTION_BYTES}}, false)
                 OR btrim(rec->>'action') = ''
                THEN 'action is not a text of 1 to {{MAX_ACTION_BYTES}} bytes'
            WHEN NOT approval_gate.is_text(rec->'reason', {{MAX_REASON_BYTES}}, false)
                 OR btrim(rec->>'reason') = ''
                THEN 'reason is not a text of 1 to {{MAX_REASON_BYTES}} bytes'
            WHEN NOT approval_gate.is_text(rec->'requestedBy', {{MAX_NAME_BYTES}}, true)
                THEN 'requestedBy is not a text of at most {{MAX_NAME_BYTES}} bytes'
            WHEN NOT approval_gate.is_text(rec->'operation', {{MAX_OPERATION_BYTES}}, true)
                 OR rec->>'operation' !~ '{{OPERATION_NAME_PATTERN}}'
                THEN 'operation is not a name of at most {{MAX_OPERATION_BYTES}} bytes'
            WHEN NOT approval_gate.is_text(rec->'payloadDigest', 64, true)
                 OR rec->>'payloadDigest' !~ '^[0-9a-f]{64}$'
                 OR (rec->>'payloadDigest' IS NULL) <> (payload IS NULL)
                THEN 'payloadDigest is not 64 lowercase hex characters with a payload'
            WHEN payload IS NOT NULL AND octet_length(payload) > {{MAX_PAYLOAD_BYTES}}
                THEN 'the payload is over {{MAX_PAYLOAD_BYTES}} bytes'
            WHEN NOT approval_gate.is_ts(rec->'createdAt') OR NOT approval_gate.is_ts(rec->'expiresAt')
                THEN 'createdAt or expiresAt is not an RFC 3339 time in milliseconds'
            WHEN approval_gate.ms_of(rec->>'expiresAt') <= approval_gate.ms_of(rec->>'createdAt')
                THEN 'it expires before it was created'
            WHEN NOT approval_gate.is_text(rec->'filedBy', {{MAX_NAME_BYTES}}, true)
                THEN 'filedBy is not a text of at most {{MAX_NAME_BYTES}} bytes'
            WHEN rec ? 'requiredApprovals' AND CASE
                    WHEN (rec->'requiredApprovals')::text ~ '^[0-9]{1,9}$'
                        THEN (rec->>'requiredApprovals')::int NOT BETWEEN 1 AND {{MAX_QUORUM}}
                    ELSE true END
                THEN 'requiredApprovals is not a whole number from 1 to {{MAX_QUORUM}}'
        END;
    END IF;
    v_problem := coalesce(v_problem, approval_gate.decision_problem(rec));
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'AG011',
            MESSAGE = format('the record of request %s is not one the library reads: %s', left(rid, 12), v_problem);
    END IF;
END
$$;

-- The audit details of one line, as the chain will hold them, or AG011: a JSON object of at
-- most {{MAX_DETAILS_BYTES}} bytes, nested at most {{MAX_DETAILS_DEPTH}} deep (a container at
-- level {{MAX_DETAILS_DEPTH}} of jsonpath's `.**`, the object itself being level 0), whose numbers
-- are whole and within 2^53 - 1 (what every reader, the verifier included, reads back
-- exactly). So no
-- caller can store a line that `audit verify` cannot read: `1e400`, thousands of nested
-- arrays. `sessionUser` is the authenticated login that wrote the line, whatever the
-- caller said.
CREATE OR REPLACE FUNCTION approval_gate.clean_details(details jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_problem text;
BEGIN
    IF details IS NULL OR details = 'null'::jsonb THEN
        details := '{}'::jsonb;
    END IF;
    IF jsonb_typeof(details) <> 'object' THEN
        v_problem := 'they are not a JSON object';
    ELSIF octet_length(details::text) > {{MAX_DETAILS_BYTES}} THEN
        v_problem := 'they are over {{MAX_DETAILS_BYTES}} bytes';
    ELSIF jsonb_path_exists(details,
            'strict $.**{{{MAX_DETAILS_DEPTH}} to last} ? (@.type() == "object" || @.type() == "array")') THEN
        v_problem := 'they are nested over {{MAX_DETAILS_DEPTH}} deep';
    ELSIF jsonb_path_exists(details, 'strict $.** ? (@.type() == "number" && '
            '(@ > {{MAX_SAFE_INTEGER}} || @ < -{{MAX_SAFE_INTEGER}} || @.floor() != @))') THEN
        v_problem := 'they hold a number that is not a whole number within 2^53 - 1';
    END IF;
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'AG011', MESSAGE = format('audit details refused: %s', v_problem);
    END IF;
    RETURN details || jsonb_build_object('sessionUser', session_user::text);
END
$$;

-- ----------------------------------------------------------------------------- the steps

-- What the queue's caps count at `now_ms`, exactly: pending requests not past their expiry,
-- and live requests (the filing slots' parts summed). Each call reads what had committed when
-- the calling statement began. Filing counts so only near the caps, holding every slot.
CREATE OR REPLACE FUNCTION approval_gate.queue(now_ms bigint, OUT pending bigint, OUT live bigint)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT (SELECT count(*) FROM approval_gate.requests r
            WHERE r.status = 'pending' AND NOT r.archived AND r.expires_ms >= now_ms),
           (SELECT sum(s.live)::bigint FROM approval_gate.filing_slots s)
$$;

-- Files a pending request (agents), or finds an identical one pending: returns NULL when it
-- filed, else the id of that request. Outside a superuser session the database's clock sets
-- `createdAt`, and `expiresAt` keeps the asked time to live from there.
--
-- Everything the queue's rules need is decided here, in the filing's own transaction, so
-- filings need no lock every filing shares:
-- - identical asks file one at a time (a transaction advisory lock on the ask), so the second
--   finds the first;
-- - the caps (`max_pending` pending requests not past their expiry, `max_requests` live ones)
--   hold exactly: a filing takes one of the 8 filing slots and needs no more while the counts
--   it reads, plus 8, are within the caps (at most 8 filings are in flight, itself included);
--   otherwise it locks every slot, waiting for the filings in flight, and counts exactly.
--   With `exclusive` it does that at once; AG010 asks the caller to run it again that way,
--   when the counts grew past the margin after it took its slot. The caps are the store's
--   own (`approval_gate.settings`): a caller's may lower them, never raise them;
-- - the record is one the library reads back (`check_record`), lives from {{MIN_TTL_MS}} ms
--   to {{MAX_TTL_MS}} ms, and `filedBy` is the authenticated session user, whatever the
--   caller wrote (its `requestedBy` stays beside it, as a claim).
DROP FUNCTION IF EXISTS approval_gate.file_request(jsonb, text, jsonb, bigint);
CREATE OR REPLACE FUNCTION approval_gate.file_request(record jsonb, payload text, details jsonb,
    given_ms bigint, max_pending bigint, max_requests bigint, exclusive boolean)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_rec jsonb := record;
    v_id text := record->>'id';
    v_created bigint;
    v_expires bigint;
    v_now bigint;
    v_ask text;
    v_found text;
    v_slot int;
    v_pending bigint;
    v_live bigint;
    v_trusted boolean;
    v_cap_pending bigint;
    v_cap_requests bigint;
    c_slots constant int := 8;
BEGIN
    v_trusted := approval_gate.require('file requests', ARRAY['approval_gate_agent']);
    SELECT max(s.value) FILTER (WHERE s.key = 'max_pending'), max(s.value) FILTER (WHERE s.key = 'max_requests')
        INTO v_cap_pending, v_cap_requests FROM approval_gate.settings s;
    IF v_cap_pending IS NULL OR v_cap_requests IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'AG012',
            MESSAGE = format('the store has no %s setting: its owner runs `approval-gate db init`',
                             CASE WHEN v_cap_pending IS NULL THEN 'max_pending' ELSE 'max_requests' END);
    END IF;
    max_pending := least(max_pending, v_cap_pending);
    max_requests := least(max_requests, v_cap_requests);
    PERFORM approval_gate.check_record(v_rec, v_id, payload, false);
    IF v_rec->>'status' IS DISTINCT FROM 'pending' OR v_rec ? 'payload'
       OR coalesce(v_rec->>'decidedAt', v_rec->>'decidedBy', v_rec->>'decisionReason') IS NOT NULL
       OR jsonb_array_length(coalesce(v_rec->'approvals', '[]'::jsonb)) <> 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = 'a new request must be pending, undecided and unsigned';
    END IF;
    IF payload IS NOT NULL THEN
        PERFORM payload::jsonb; -- refuses what is not JSON
    END IF;
    v_created := approval_gate.ms_of(v_rec->>'createdAt');
    v_expires := approval_gate.ms_of(v_rec->>'expiresAt');
    -- The database's clock (or a superuser's given time), read here: after the checks.
    v_now := CASE WHEN given_ms IS NOT NULL AND v_trusted THEN given_ms
                  ELSE floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint END;
    IF v_now <> v_created THEN
        v_expires := v_now + (v_expires - v_created);
        v_created := v_now;
        v_rec := v_rec || jsonb_build_object('createdAt', approval_gate.ts_text(v_created),
                                             'expiresAt', approval_gate.ts_text(v_expires));
    END IF;
    IF v_expires - v_created NOT BETWEEN {{MIN_TTL_MS}} AND {{MAX_TTL_MS}} THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005',
            MESSAGE = format('a request lives %s ms to %s ms, not %s ms', {{MIN_TTL_MS}}, {{MAX_TTL_MS}},
                             v_expires - v_created);
    END IF;
    v_rec := v_rec || jsonb_build_object('filedBy', session_user::text);
    v_ask := encode(sha256(convert_to(jsonb_build_array(v_rec->'action', v_rec->'operation',
        v_rec->'payloadDigest', v_rec->'requestedBy')::text, 'UTF8')), 'hex');

    PERFORM pg_advisory_xact_lock(1095192404, hashtext(v_ask));
    SELECT r.id INTO v_found FROM approval_gate.requests r
        WHERE r.ask = v_ask AND r.status = 'pending' AND NOT r.archived AND r.expires_ms >= v_now
        ORDER BY r.created_ms, r.id LIMIT 1;
    IF FOUND THEN
        RETURN v_found;
    END IF;

    -- Far from the caps, bounds do: the pending requests filed less those settled since (never
    -- below the pending ones not past their expiry), and the live ones. Both read in one
    -- statement, from what had committed when it began.
    IF NOT exclusive THEN
        SELECT (SELECT sum(s.pending) FROM approval_gate.filing_slots s)
                   - (SELECT sum(d.settled) FROM approval_gate.settled d),
               (SELECT sum(s.live) FROM approval_gate.filing_slots s)
            INTO v_pending, v_live;
        IF v_pending + c_slots <= max_pending AND v_live + c_slots <= max_requests THEN
            SELECT s.slot INTO v_slot FROM approval_gate.filing_slots s
                ORDER BY s.slot FOR UPDATE SKIP LOCKED LIMIT 1;
            IF v_slot IS NULL THEN
                -- Every slot busy: wait for one (holding no other, so no deadlock).
                SELECT s.slot INTO v_slot FROM approval_gate.filing_slots s
                    WHERE s.slot = pg_backend_pid() % c_slots FOR UPDATE;
            END IF;
        END IF;
        IF v_slot IS NOT NULL THEN
            -- Counted again with the slot held: what was filed meanwhile is in these counts.
            SELECT (SELECT sum(s.pending) FROM approval_gate.filing_slots s)
                       - (SELECT sum(d.settled) FROM approval_gate.settled d),
                   (SELECT sum(s.live) FROM approval_gate.filing_slots s)
                INTO v_pending, v_live;
            IF v_pending + c_slots > max_pending OR v_live + c_slots > max_requests THEN
                RAISE EXCEPTION USING ERRCODE = 'AG010',
                    MESSAGE = 'the queue neared its caps: file again with every filing slot';
            END IF;
        END IF;
    END IF;
    IF v_slot IS NULL THEN
        -- Every slot, then every settled part (a decision holds one, and no slot): no filing
        -- or decision is in flight that these counts miss. The bound is set to the exact
        -- count of pending requests, so expiries never recorded stop weighing on it.
        PERFORM FROM approval_gate.filing_slots s ORDER BY s.slot FOR UPDATE;
        PERFORM FROM approval_gate.settled d ORDER BY d.part FOR UPDATE;
        v_slot := 0;
        UPDATE approval_gate.settled SET settled = 0 WHERE settled <> 0;
        UPDATE approval_gate.filing_slots
            SET pending = CASE WHEN slot = 0 THEN (SELECT count(*) FROM approval_gate.requests r
                                                   WHERE r.status = 'pending' AND NOT r.archived)
                               ELSE 0 END;
        SELECT q.pending, q.live INTO v_pending, v_live FROM approval_gate.queue(v_now) q;
        IF v_pending >= max_pending THEN
            RAISE EXCEPTION USING ERRCODE = 'AG008', HINT = v_pending || ' ' || max_pending,
                MESSAGE = format('the queue is full: %s pending requests', v_pending);
        END IF;
        IF v_live >= max_requests THEN
            RAISE EXCEPTION USING ERRCODE = 'AG009', HINT = v_live || ' ' || max_requests,
                MESSAGE = format('the creation limit is reached: %s live requests', v_live);
        END IF;
    END IF;

    INSERT INTO approval_gate.requests (id, record, payload, status, created_ms, expires_ms, ask)
        VALUES (v_id, v_rec, payload, 'pending', v_created, v_expires, v_ask);
    UPDATE approval_gate.filing_slots SET live = live + 1, pending = pending + 1 WHERE slot = v_slot;
    PERFORM approval_gate.append(v_now, 'requested', v_id, details);
    RETURN NULL;
END
$$;

-- Whether `kept` is `old` with some elements left out, the rest in their order.
CREATE OR REPLACE FUNCTION approval_gate.keeps_in_order(old jsonb, kept jsonb)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    i int := 0;
    n int := jsonb_array_length(old);
    e jsonb;
BEGIN
    FOR e IN SELECT value FROM jsonb_array_elements(kept) LOOP
        WHILE i < n AND old->i <> e LOOP
            i := i + 1;
        END LOOP;
        IF i >= n THEN
            RETURN false;
        END IF;
        i := i + 1;
    END LOOP;
    RETURN true;
END
$$;

-- A decision on one request: `approve` (approvers), `deny` (agents and approvers), `revoke`
-- (approvers), `expire` (anyone, once the clock is past the expiry). `record` is the record
-- as the caller means it to be; only the decision's fields may differ from what is stored,
-- and only in the way the step allows. Returns the record as stored (with the database's
-- clock and session user where it set them), so the caller need not read it back.
DO $drop$
BEGIN
    IF (SELECT p.prorettype FROM pg_catalog.pg_proc p
        WHERE p.oid = to_regprocedure('approval_gate.decide(text, text, text, jsonb, jsonb, bigint)'))
       = 'bigint'::regtype THEN
        DROP FUNCTION approval_gate.decide(text, text, text, jsonb, jsonb, bigint); -- version 2's
    END IF;
END
$drop$;
CREATE OR REPLACE FUNCTION approval_gate.decide(rid text, step text, event text, record jsonb, details jsonb, given_ms bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r approval_gate.requests;
    v_new jsonb := record;
    v_details jsonb := coalesce(details, '{}'::jsonb);
    v_now bigint;
    v_by text;
    v_old_approvals jsonb;
    v_new_approvals jsonb;
    v_old_n int;
    v_new_n int;
    v_principals int;
    v_status text := record->>'status';
    v_decision text[] := ARRAY['status', 'decidedAt', 'decidedBy', 'decisionReason', 'approvals'];
    v_trusted boolean;
    v_part int;
BEGIN
    CASE step
        WHEN 'approve' THEN v_trusted := approval_gate.require('approve', ARRAY['approval_gate_approver']);
        WHEN 'deny' THEN v_trusted := approval_gate.require('deny', ARRAY['approval_gate_agent', 'approval_gate_approver']);
        WHEN 'revoke' THEN v_trusted := approval_gate.require('revoke', ARRAY['approval_gate_approver']);
        WHEN 'expire' THEN v_trusted := approval_gate.require('record an expiry',
            ARRAY['approval_gate_agent', 'approval_gate_approver', 'approval_gate_executor']);
        ELSE RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = format('unknown step %s', step);
    END CASE;
    -- The live row, locked (as `locked`), then the clock (as `now_ms`): folded in here.
    SELECT * INTO r FROM approval_gate.requests WHERE id = rid FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'AG003', MESSAGE = format('request %s not found', rid);
    END IF;
    IF r.archived THEN
        RAISE EXCEPTION USING ERRCODE = 'AG006', MESSAGE = format('request %s is archived', rid);
    END IF;
    v_now := CASE WHEN given_ms IS NOT NULL AND v_trusted THEN given_ms
                  ELSE floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint END;
    IF (v_new - v_decision) IS DISTINCT FROM (r.record - v_decision) THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005',
            MESSAGE = format('a decision on request %s may change only its decision', rid);
    END IF;
    -- Read only once its shape is checked: what `jsonb_array_length` and the rest read.
    PERFORM approval_gate.check_record(v_new, rid, r.payload, true);
    v_old_approvals := coalesce(r.record->'approvals', '[]'::jsonb);
    v_new_approvals := coalesce(v_new->'approvals', '[]'::jsonb);
    v_old_n := jsonb_array_length(v_old_approvals);
    v_new_n := jsonb_array_length(v_new_approvals);
    -- A quorum counts approvers, not entries: the same principal twice is one.
    SELECT count(DISTINCT e->>'principal') INTO v_principals FROM jsonb_array_elements(v_new_approvals) e;
    -- Approvals grow by one signed approval at a time, and only when approving. A record
    -- full of approvals may give up some to make room (the gate drops those its policy does
    -- not trust; each stays in the audit rows where it was recorded): what is kept, it keeps
    -- in order.
    IF NOT (v_new_approvals = v_old_approvals
            OR (step = 'approve' AND v_new_n >= 1
                AND (v_new_n = v_old_n + 1 OR v_old_n >= {{MAX_QUORUM}})
                AND approval_gate.keeps_in_order(v_old_approvals, v_new_approvals - (v_new_n - 1)))) THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005',
            MESSAGE = format('a decision on request %s may only add one approval', rid);
    END IF;
    CASE step
        WHEN 'expire' THEN
            IF r.status <> 'pending' THEN
                PERFORM approval_gate.wrong_state('expire', rid, r.status);
            END IF;
            IF v_now <= r.expires_ms THEN
                RETURN r.record::text; -- not due by this clock: nothing to record
            END IF;
            IF v_status <> 'expired' OR event <> 'expired' THEN
                RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = 'an expiry makes a request expired';
            END IF;
        WHEN 'approve', 'deny' THEN
            IF r.status <> 'pending' THEN
                PERFORM approval_gate.wrong_state(step, rid, r.status);
            END IF;
            IF v_now > r.expires_ms THEN
                RAISE EXCEPTION USING ERRCODE = 'AG002', MESSAGE = format('request %s expired', rid);
            END IF;
            IF step = 'deny' AND (v_status <> 'denied' OR event <> 'denied') THEN
                RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = 'a denial makes a request denied';
            END IF;
            -- The last approval a quorum needs approves; one short of it is added. The number
            -- recorded at filing is a floor: the deciding gate's policy may ask for more.
            IF step = 'approve' AND NOT (
                   (event = 'approved' AND v_status = 'approved'
                    AND (v_principals >= coalesce((v_new->>'requiredApprovals')::int, 1)
                         OR coalesce((v_new->>'requiredApprovals')::int, 1) = 1))
                OR (event = 'approval_added' AND v_status = 'pending' AND v_new_approvals <> v_old_approvals)) THEN
                RAISE EXCEPTION USING ERRCODE = 'AG005',
                    MESSAGE = 'an approval needs all its required signed approvals';
            END IF;
        WHEN 'revoke' THEN
            IF r.status <> 'approved' OR r.claimed_ms IS NOT NULL THEN
                PERFORM approval_gate.wrong_state('revoke', rid,
                    CASE WHEN r.claimed_ms IS NOT NULL THEN 'consumed' ELSE r.status END);
            END IF;
            IF v_status <> 'revoked' OR event <> 'revoked' THEN
                RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = 'a revocation makes a request revoked';
            END IF;
    END CASE;
    IF (v_new->>'decidedAt' IS NULL) <> (v_status = 'pending') THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = 'a decided request has a decision time';
    END IF;
    -- Outside a superuser session, the decision carries the database's clock and the
    -- authenticated session user, whatever the caller wrote.
    IF NOT v_trusted THEN
        v_by := session_user::text;
        IF v_new->>'decidedAt' IS NOT NULL THEN
            v_new := v_new || jsonb_build_object('decidedAt', approval_gate.ts_text(v_now));
        END IF;
        IF v_new ? 'decidedBy' AND v_new->>'decidedBy' IS NOT NULL THEN
            v_new := v_new || jsonb_build_object('decidedBy', v_by);
        END IF;
        IF v_new_n > v_old_n THEN
            v_new := jsonb_set(v_new, ARRAY['approvals', (v_new_n - 1)::text],
                (v_new_approvals->(v_new_n - 1)) || jsonb_build_object(
                    'decidedBy', v_by, 'decidedAt', approval_gate.ts_text(v_now)));
        END IF;
        IF v_details ? 'decidedBy' THEN
            v_details := v_details || jsonb_build_object('decidedBy', v_by);
        END IF;
    END IF;
    -- (What was set since `check_record` above is the database's own: a time, a login.)
    UPDATE approval_gate.requests SET record = v_new, status = v_status WHERE id = rid;
    IF r.status = 'pending' AND v_status <> 'pending' THEN
        -- One pending request fewer, in a settled part no other decision holds (or, if every
        -- part is held, the first one, once it is free).
        SELECT d.part INTO v_part FROM approval_gate.settled d ORDER BY d.part FOR UPDATE SKIP LOCKED LIMIT 1;
        UPDATE approval_gate.settled SET settled = settled + 1 WHERE part = coalesce(v_part, 0);
    END IF;
    PERFORM approval_gate.append(v_now, event, rid, v_details);
    RETURN v_new::text;
END
$$;

-- The single-use claim (executors): locks the row, reads the clock, and writes the claim and
-- its `consumed` line together. Returns `claimed`, `already_consumed` (nothing written: the
-- caller records the replay), or the reason it refuses (recorded here as `consume_refused`).
CREATE OR REPLACE FUNCTION approval_gate.claim(rid text, details jsonb, given_ms bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r approval_gate.requests;
    v_now bigint;
    v_reason text;
    v_trusted boolean;
BEGIN
    v_trusted := approval_gate.require('consume approvals', ARRAY['approval_gate_executor']);
    -- The live row, locked (as `locked`), then the clock (as `now_ms`): folded in here.
    SELECT * INTO r FROM approval_gate.requests WHERE id = rid FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'AG003', MESSAGE = format('request %s not found', rid);
    END IF;
    IF r.archived THEN
        RAISE EXCEPTION USING ERRCODE = 'AG006', MESSAGE = format('request %s is archived', rid);
    END IF;
    v_now := CASE WHEN given_ms IS NOT NULL AND v_trusted THEN given_ms
                  ELSE floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint END;
    IF r.claimed_ms IS NOT NULL THEN
        RETURN 'already_consumed';
    END IF;
    v_reason := CASE
        WHEN r.status = 'pending' THEN 'not_approved'
        WHEN r.status = 'denied' THEN 'denied'
        WHEN r.status = 'expired' THEN 'expired'
        WHEN r.status = 'revoked' THEN 'revoked'
        WHEN r.status <> 'approved' THEN 'not_approved'
        WHEN v_now > r.expires_ms THEN 'approval_expired'
        WHEN (SELECT count(DISTINCT e->>'principal')
              FROM jsonb_array_elements(coalesce(r.record->'approvals', '[]'::jsonb)) e)
             < coalesce((r.record->>'requiredApprovals')::int, 1)
             AND coalesce((r.record->>'requiredApprovals')::int, 1) > 1 THEN 'insufficient_approvals'
    END;
    IF v_reason IS NOT NULL THEN
        PERFORM approval_gate.append(v_now, 'consume_refused', rid,
            jsonb_build_object('reason', v_reason, 'detail', 'refused by the database'));
        RETURN v_reason;
    END IF;
    UPDATE approval_gate.requests SET claimed_ms = v_now WHERE id = rid;
    PERFORM approval_gate.append(v_now, 'consumed', rid, details);
    RETURN 'claimed';
END
$$;

-- Records a refusal: a refused consume (executors) or a refused decision (whoever may decide),
-- and nothing else. A refused consume leaves a line also of an id no request has (nobody filed
-- it; it was never found): the id need only be one, as the chain's reader parses it. A refused
-- decision concerns a request the store has, names the step (`operation`) and the refusal's
-- code (`reason`, one of the library's codes) and may say more in `detail`; and one role's
-- same refusal of the same request is kept once: so the lines an agent can add by being
-- refused are bounded by the requests there are, not by how often it tries. Details are
-- bounded like every line's (`append`).
CREATE OR REPLACE FUNCTION approval_gate.refuse(rid text, event text, details jsonb, given_ms bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_pos bigint;
BEGIN
    IF event = 'decision_refused' THEN
        PERFORM approval_gate.require('record refused decisions',
            ARRAY['approval_gate_agent', 'approval_gate_approver', 'approval_gate_executor']);
    ELSE
        PERFORM approval_gate.require('record refused consumes', ARRAY['approval_gate_executor']);
    END IF;
    IF event NOT IN ('consume_refused', 'consume_replayed', 'decision_refused') THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = format('%s is not a refusal', event);
    END IF;
    IF rid IS NULL OR rid !~ '^[0-9a-f]{12}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = format('%s is not a request id', rid);
    END IF;
    IF event = 'decision_refused' THEN
        IF NOT EXISTS (SELECT FROM approval_gate.requests WHERE id = rid) THEN
            RAISE EXCEPTION USING ERRCODE = 'AG003', MESSAGE = format('request %s not found', rid);
        END IF;
        IF pg_catalog.jsonb_typeof(details) IS DISTINCT FROM 'object'
           OR EXISTS (SELECT FROM pg_catalog.jsonb_object_keys(details) k
                      WHERE k NOT IN ('operation', 'reason', 'detail'))
           OR (details->>'operation') IS NULL
           OR (details->>'operation') NOT IN ('approve', 'deny', 'revoke')
           OR (details->>'reason') IS NULL
           OR (details->>'reason') <> ALL (ARRAY[{{ERROR_CODES}}])
           OR pg_catalog.jsonb_typeof(details->'detail') IS DISTINCT FROM 'string'
           OR pg_catalog.octet_length(details->>'detail') > {{MAX_REFUSAL_DETAIL_BYTES}} THEN
            RAISE EXCEPTION USING ERRCODE = 'AG005',
                MESSAGE = 'a refused decision names its operation (approve, deny, revoke), a refusal code and a detail';
        END IF;
        -- A sealed row keeps its details in its line only.
        SELECT a.pos INTO v_pos
            FROM approval_gate.audit a, LATERAL (SELECT coalesce(a.details, a.line::jsonb) AS d) x
            WHERE a.id = rid AND a.event = 'decision_refused'
              AND x.d->>'sessionUser' = session_user::text
              AND x.d->>'operation' = refuse.details->>'operation'
              AND x.d->>'reason' = refuse.details->>'reason'
            LIMIT 1;
        IF FOUND THEN
            RETURN v_pos;
        END IF;
    END IF;
    RETURN approval_gate.append(approval_gate.now_ms(given_ms), event, rid, details);
END
$$;

-- An execution starts (executors), once per claim, on the session that holds its session
-- advisory lock (class 1095192401, hashtext(id)) for as long as it runs: recovery takes a
-- free lock for a dead executor, so a start on any other session (AG013) would be recorded
-- `outcome unknown` while its executor still runs.
CREATE OR REPLACE FUNCTION approval_gate.start_execution(rid text, details jsonb, given_ms bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r approval_gate.requests;
BEGIN
    PERFORM approval_gate.require('record executions', ARRAY['approval_gate_executor']);
    r := approval_gate.locked(rid);
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_locks l
                   WHERE l.locktype = 'advisory' AND l.granted AND l.pid = pg_backend_pid()
                     AND l.classid = 1095192401::oid AND l.objsubid = 2
                     AND l.objid::text::bigint = (hashtext(rid)::bigint + 4294967296) % 4294967296) THEN
        RAISE EXCEPTION USING ERRCODE = 'AG013',
            MESSAGE = format('an execution of request %s starts only on the session that holds its execution lock', rid);
    END IF;
    IF r.claimed_ms IS NULL OR r.started THEN
        PERFORM approval_gate.wrong_state('start executing', rid,
            CASE WHEN r.started THEN 'already executed' ELSE 'not consumed' END);
    END IF;
    UPDATE approval_gate.requests SET started = true, executing = true WHERE id = rid;
    RETURN approval_gate.append(approval_gate.now_ms(given_ms), 'execution_started', rid, details);
END
$$;

CREATE OR REPLACE FUNCTION approval_gate.finish_execution(rid text, details jsonb, given_ms bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r approval_gate.requests;
BEGIN
    PERFORM approval_gate.require('record executions', ARRAY['approval_gate_executor']);
    r := approval_gate.locked(rid);
    IF NOT r.executing THEN
        PERFORM approval_gate.wrong_state('finish executing', rid, 'not executing');
    END IF;
    UPDATE approval_gate.requests SET executing = false WHERE id = rid;
    RETURN approval_gate.append(approval_gate.now_ms(given_ms), 'execution_finished', rid, details);
END
$$;

-- Records `outcome unknown` for every execution whose session is gone (its advisory lock is
-- free), and takes nothing from the caller but the time. Only executors and the store's owner
-- run it: from anyone else, a call left open inside BEGIN would hold the running executions'
-- rows and keep their executors from recording outcomes. A session holding an advisory lock
-- itself would find that one free (they are re-entrant): it recovers nothing.
CREATE OR REPLACE FUNCTION approval_gate.recover_executions(given_ms bigint)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id text;
BEGIN
    IF session_user::text IS DISTINCT FROM
       (SELECT n.nspowner::regrole::text FROM pg_namespace n WHERE n.nspname = 'approval_gate') THEN
        PERFORM approval_gate.require('recover executions', ARRAY['approval_gate_executor']);
    END IF;
    IF EXISTS (SELECT FROM pg_locks l WHERE l.pid = pg_backend_pid() AND l.locktype = 'advisory') THEN
        RETURN;
    END IF;
    FOR v_id IN SELECT id FROM approval_gate.requests WHERE executing ORDER BY id FOR UPDATE SKIP LOCKED LOOP
        IF pg_try_advisory_lock(1095192401, hashtext(v_id)) THEN
            UPDATE approval_gate.requests SET executing = false WHERE id = v_id;
            PERFORM approval_gate.append(approval_gate.now_ms(given_ms), 'execution_finished', v_id,
                jsonb_build_object('outcome', 'unknown', 'recovered', true, 'error',
                    'the executing process ended without recording an outcome; inspect the external system, nothing is retried'));
            PERFORM pg_advisory_unlock(1095192401, hashtext(v_id));
            RETURN NEXT v_id;
        END IF;
    END LOOP;
END
$$;

-- Moves a finished request out of the live set (approvers).
CREATE OR REPLACE FUNCTION approval_gate.archive(rid text, details jsonb, given_ms bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r approval_gate.requests;
    v_now bigint;
    v_slot int;
BEGIN
    PERFORM approval_gate.require('archive', ARRAY['approval_gate_approver']);
    r := approval_gate.locked(rid);
    v_now := approval_gate.now_ms(given_ms);
    IF r.executing OR NOT (r.status IN ('denied', 'expired', 'revoked') OR r.claimed_ms IS NOT NULL
                           OR (r.status = 'approved' AND v_now > r.expires_ms)) THEN
        PERFORM approval_gate.wrong_state('archive', rid,
            CASE WHEN r.executing THEN 'executing' ELSE 'not finished' END);
    END IF;
    UPDATE approval_gate.requests SET archived = true WHERE id = rid;
    -- One request fewer live, in a free filing slot's part (or, if every slot is busy, in
    -- the first one's, once it is free).
    SELECT s.slot INTO v_slot FROM approval_gate.filing_slots s ORDER BY s.slot FOR UPDATE SKIP LOCKED LIMIT 1;
    UPDATE approval_gate.filing_slots SET live = live - 1 WHERE slot = coalesce(v_slot, 0);
    RETURN approval_gate.append(v_now, 'archived', rid, details);
END
$$;

-- ----------------------------------------------------------------------- the owner's steps
-- Granted to no group role: the schema's owner (who ran `db init`) and superusers only.

-- Sets the store's caps (`db init` runs it with the operator's settings) and, when they
-- change, records `limits_set` with the old and new values and who set them.
CREATE OR REPLACE FUNCTION approval_gate.set_limits(max_pending bigint, max_requests bigint, given_ms bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_pending bigint;
    v_requests bigint;
BEGIN
    IF max_pending IS NULL OR max_requests IS NULL OR max_pending < 1 OR max_requests < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = 'the caps are whole numbers from 1';
    END IF;
    SELECT s.value INTO v_pending FROM approval_gate.settings s WHERE s.key = 'max_pending' FOR UPDATE;
    SELECT s.value INTO v_requests FROM approval_gate.settings s WHERE s.key = 'max_requests' FOR UPDATE;
    IF v_pending IS NOT DISTINCT FROM max_pending AND v_requests IS NOT DISTINCT FROM max_requests THEN
        RETURN false;
    END IF;
    INSERT INTO approval_gate.settings (key, value)
        VALUES ('max_pending', max_pending), ('max_requests', max_requests)
        ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
    PERFORM approval_gate.append(approval_gate.now_ms(given_ms), 'limits_set', '000000000000',
        jsonb_build_object('maxPending', max_pending, 'maxRequests', max_requests,
                           'previousMaxPending', v_pending, 'previousMaxRequests', v_requests));
    RETURN true;
END
$$;

-- Re-anchors a chain whose head row disagrees with its lines, as `audit reanchor` does on
-- files: the caller has read the lines and checked that they chain (`found_lines`, ending
-- in `found_hash`) while the head row said `previous`; if that is still so, the head row is
-- set to the lines' end and a `reanchored` line records who (`by` as given, and the session
-- user), what verification reported, and what was found. Returns that line's number.
CREATE OR REPLACE FUNCTION approval_gate.reanchor(by text, problem text, found_lines bigint,
    found_hash text, previous bigint, given_ms bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_head approval_gate.audit_head;
    v_line text;
    v_pos bigint;
BEGIN
    SELECT * INTO v_head FROM approval_gate.audit_head h WHERE h.one FOR UPDATE;
    IF v_head.seq IS DISTINCT FROM previous THEN
        RAISE EXCEPTION USING ERRCODE = 'AG007', HINT = '0',
            MESSAGE = 'the head row changed while the chain was read: verify it again';
    END IF;
    IF found_lines > 0 THEN
        SELECT a.line INTO v_line FROM approval_gate.audit a WHERE a.seq = found_lines;
    END IF;
    IF (found_lines > 0 AND (v_line IS NULL OR right(v_line, 66) <> found_hash || '"}'))
       OR (found_lines = 0 AND found_hash <> repeat('0', 64))
       OR EXISTS (SELECT FROM approval_gate.audit a WHERE a.seq > found_lines) THEN
        RAISE EXCEPTION USING ERRCODE = 'AG007', HINT = '0',
            MESSAGE = 'the chain changed while it was read: verify it again';
    END IF;
    IF v_head.seq = found_lines AND v_head.hash = found_hash THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005',
            MESSAGE = 'the audit chain and its head row agree: nothing to re-anchor';
    END IF;
    UPDATE approval_gate.audit_head SET seq = found_lines, hash = found_hash WHERE one;
    INSERT INTO approval_gate.audit (at_ms, id, event, details)
        VALUES (approval_gate.now_ms(given_ms), '000000000000', 'reanchored',
                approval_gate.clean_details(jsonb_build_object('by', by, 'problem', problem,
                    'foundLines', found_lines, 'foundLastHash', found_hash,
                    'previousAnchor', previous, 'tornBytesCut', 0)))
        RETURNING pos INTO v_pos;
    PERFORM approval_gate.seal(true);
    RETURN (SELECT a.seq FROM approval_gate.audit a WHERE a.pos = v_pos);
END
$$;

-- ------------------------------------------------------------------------------- grants

REVOKE ALL ON ALL TABLES IN SCHEMA approval_gate FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA approval_gate FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA approval_gate FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA approval_gate
    FROM approval_gate_agent, approval_gate_approver, approval_gate_executor;
REVOKE ALL ON ALL TABLES IN SCHEMA approval_gate
    FROM approval_gate_agent, approval_gate_approver, approval_gate_executor;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA approval_gate
    FROM approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT USAGE ON SCHEMA approval_gate TO approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT SELECT ON approval_gate.meta, approval_gate.requests, approval_gate.audit, approval_gate.audit_head,
    approval_gate.filing_slots, approval_gate.settled
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.file_request(jsonb, text, jsonb, bigint, bigint, bigint, boolean)
    TO approval_gate_agent;
GRANT EXECUTE ON FUNCTION approval_gate.decide(text, text, text, jsonb, jsonb, bigint)
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.claim(text, jsonb, bigint) TO approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.refuse(text, text, jsonb, bigint)
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.start_execution(text, jsonb, bigint) TO approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.finish_execution(text, jsonb, bigint) TO approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.archive(text, jsonb, bigint) TO approval_gate_approver;
GRANT EXECUTE ON FUNCTION approval_gate.recover_executions(bigint) TO approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.hold(integer, text)
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.seal(boolean), approval_gate.wake(text)
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor;
-- The store's limits are for everyone to read (what the caps are), for its owner to set.
GRANT SELECT ON approval_gate.settings TO approval_gate_agent, approval_gate_approver, approval_gate_executor;

-- ------------------------------------------------------- the cluster's shared lock table

-- No role of the store may take advisory locks or create temporary objects in this database:
-- each takes entries in the lock table every database of the cluster shares, and one session
-- taking tens of thousands fills it ("out of shared memory" for every store). The advisory-lock
-- functions are EXECUTE to PUBLIC in each database's own catalog, and only a superuser may
-- revoke that: a superuser's init does it (and grants them back to a schema owner who is not
-- one, whose functions take the store's locks); an owner's init checks that it was done and
-- refuses otherwise, saying what to run. `approval_gate.hold` takes the library's own locks,
-- one per session. TEMPORARY on the database is revoked by its owner (or a superuser).
DO $locks$
DECLARE
    f regprocedure;
    v_groups text[] := ARRAY['approval_gate_agent', 'approval_gate_approver', 'approval_gate_executor'];
    v_owner oid := (SELECT n.nspowner FROM pg_namespace n WHERE n.nspname = 'approval_gate');
    v_super boolean := (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user);
    g text;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
             WHERE p.pronamespace = 'pg_catalog'::regnamespace
               AND p.proname ~ '^pg_(try_)?advisory_(xact_)?lock' LOOP
        IF v_super THEN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC, %s', f,
                           (SELECT string_agg(quote_ident(x), ', ') FROM unnest(v_groups) x));
            IF NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.oid = v_owner) THEN
                EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', f, v_owner::regrole);
            END IF;
        END IF;
        FOREACH g IN ARRAY v_groups LOOP
            IF has_function_privilege(g, f, 'EXECUTE') THEN
                RAISE EXCEPTION USING ERRCODE = 'AG005',
                    MESSAGE = format('%s may call %s: a role of the store could fill the cluster''s lock table', g, f),
                    DETAIL = 'run `approval-gate db init` once as a superuser in this database, or have a superuser run the statements in docs/postgres.md ("Setting it up")';
            END IF;
        END LOOP;
        IF NOT has_function_privilege(v_owner, f, 'EXECUTE') THEN
            RAISE EXCEPTION USING ERRCODE = 'AG005',
                MESSAGE = format('the store''s owner %s may not call %s, which its functions use', v_owner::regrole, f),
                DETAIL = 'run `approval-gate db init` once as a superuser in this database, or have a superuser run the statements in docs/postgres.md ("Setting it up")';
        END IF;
    END LOOP;
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC, %s', current_database(),
                   (SELECT string_agg(quote_ident(x), ', ') FROM unnest(v_groups) x));
    FOREACH g IN ARRAY v_groups LOOP
        IF has_database_privilege(g, current_database(), 'TEMPORARY') THEN
            RAISE EXCEPTION USING ERRCODE = 'AG005',
                MESSAGE = format('%s may create temporary objects in this database', g),
                DETAIL = 'run `approval-gate db init` as the database''s owner or a superuser';
        END IF;
    END LOOP;
END
$locks$;
