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
    -- The first refusal that applies, in the library's order (`rules::check_consumable`,
    -- after a due expiry is recorded): status, quorum, claim, expiry.
    v_reason := CASE
        WHEN r.status = 'pending' AND v_now > r.expires_ms THEN 'expired'
        WHEN r.status = 'pending' THEN 'not_approved'
        WHEN r.status = 'denied' THEN 'denied'
        WHEN r.status = 'expired' THEN 'expired'
        WHEN r.status = 'revoked' THEN 'revoked'
        WHEN r.status <> 'approved' THEN 'not_approved'
        WHEN (SELECT count(DISTINCT e->>'principal')
              FROM jsonb_array_elements(coalesce(r.record->'approvals', '[]'::jsonb)) e)
             < coalesce((r.record->>'requiredApprovals')::int, 1)
             AND coalesce((r.record->>'requiredApprovals')::int, 1) > 1 THEN 'insufficient_approvals'
        WHEN r.claimed_ms IS NOT NULL THEN 'already_consumed'
        WHEN v_now > r.expires_ms THEN 'approval_expired'
        -- Approved by an allowance: its use is counted by `claim_under` only (schema 5).
        WHEN r.record ? 'allowance' THEN 'allowance_not_covering'
    END;
    IF v_reason = 'already_consumed' THEN
        RETURN v_reason;
    END IF;
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

