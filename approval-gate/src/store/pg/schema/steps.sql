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
            ARRAY['approval_gate_agent', 'approval_gate_approver', 'approval_gate_executor',
                  'approval_gate_notifier']);
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

