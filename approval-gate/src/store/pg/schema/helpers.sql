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

