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
    FROM approval_gate_agent, approval_gate_approver, approval_gate_executor,
    approval_gate_notifier;
REVOKE ALL ON ALL TABLES IN SCHEMA approval_gate
    FROM approval_gate_agent, approval_gate_approver, approval_gate_executor,
    approval_gate_notifier;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA approval_gate
    FROM approval_gate_agent, approval_gate_approver, approval_gate_executor,
    approval_gate_notifier;
GRANT USAGE ON SCHEMA approval_gate TO approval_gate_agent, approval_gate_approver, approval_gate_executor,
    approval_gate_notifier;
GRANT SELECT ON approval_gate.meta, approval_gate.requests, approval_gate.audit, approval_gate.audit_head,
    approval_gate.filing_slots, approval_gate.settled
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor,
    approval_gate_notifier;
GRANT EXECUTE ON FUNCTION approval_gate.file_request(jsonb, text, jsonb, bigint, bigint, bigint, boolean)
    TO approval_gate_agent;
GRANT EXECUTE ON FUNCTION approval_gate.decide(text, text, text, jsonb, jsonb, bigint)
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor,
    approval_gate_notifier;
-- The notifier: its ledger, and (through `decide`, which allows it that step only) recording
-- the expiry of a pending request it finds past it.
GRANT EXECUTE ON FUNCTION approval_gate.claim_notice(text, text, bigint, bigint),
    approval_gate.record_notice(text, text, text, integer, bigint) TO approval_gate_notifier;
GRANT SELECT ON approval_gate.notices
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor,
    approval_gate_notifier;
GRANT EXECUTE ON FUNCTION approval_gate.claim(text, jsonb, bigint) TO approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.refuse(text, text, jsonb, bigint)
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.start_execution(text, jsonb, bigint) TO approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.finish_execution(text, jsonb, bigint) TO approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.archive(text, jsonb, bigint) TO approval_gate_approver;
GRANT EXECUTE ON FUNCTION approval_gate.recover_executions(bigint) TO approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.hold(integer, text)
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor,
    approval_gate_notifier;
GRANT EXECUTE ON FUNCTION approval_gate.seal(boolean), approval_gate.wake(text)
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor,
    approval_gate_notifier;
-- The store's limits are for everyone to read (what the caps are), for its owner to set.
GRANT SELECT ON approval_gate.settings TO approval_gate_agent, approval_gate_approver, approval_gate_executor,
    approval_gate_notifier;

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
    v_groups text[] := ARRAY['approval_gate_agent', 'approval_gate_approver', 'approval_gate_executor',
                             'approval_gate_notifier'];
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
