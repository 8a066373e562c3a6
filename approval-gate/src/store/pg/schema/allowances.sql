-- ------------------------------------------------------------------------------ allowances
--
-- An allowance a human signed (issue 41): `record` is the signed allowance as the library
-- keeps it (the terms, the quorum, the signatures), written once by `grant_allowance`, its terms
-- never changed (`cosign_allowance` only adds a co-signer's signature to its list); the
-- database cannot verify SSH signatures, so the library verifies them offline at the grant, at
-- each co-signature and again at every use. Only an approver may grant or revoke one; every role may
-- read them (an agent may list what it is allowed), none may write the tables but through
-- these functions. `uses`, `spent` and `allowance_uses` are counted under the allowance's row
-- lock, in the transaction of the claim each use approves.
CREATE TABLE IF NOT EXISTS approval_gate.allowances (
    id           text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{12}$'),
    record       jsonb NOT NULL,
    granted_by   text NOT NULL,
    granted_ms   bigint NOT NULL,
    revoked_ms   bigint,
    uses         integer NOT NULL DEFAULT 0 CHECK (uses >= 0),
    spent        bigint NOT NULL DEFAULT 0 CHECK (spent >= 0)
);
CREATE TABLE IF NOT EXISTS approval_gate.allowance_uses (
    allowance text NOT NULL REFERENCES approval_gate.allowances (id),
    request   text NOT NULL,
    amount    bigint CHECK (amount >= 0),
    at_ms     bigint NOT NULL,
    PRIMARY KEY (allowance, request)
);

-- Keeps a signed allowance the library verified (approvers): TRUE, with its
-- `allowance_granted` line (`allowance_proposed` while it carries fewer signatures than its
-- quorum, awaiting co-signers), or FALSE (nothing written) if its id is taken.
CREATE OR REPLACE FUNCTION approval_gate.grant_allowance(record jsonb, details jsonb, given_ms bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_id text := record->'allowance'->>'id';
    v_now bigint;
    v_by text;
BEGIN
    PERFORM approval_gate.require('grant allowances', ARRAY['approval_gate_approver']);
    IF v_id IS NULL OR v_id !~ '^[0-9a-f]{12}$' OR v_id = '000000000000'
       OR jsonb_typeof(record->'signatures') IS DISTINCT FROM 'array'
       OR jsonb_array_length(record->'signatures') = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = 'an allowance needs an id and signatures';
    END IF;
    v_now := approval_gate.now_ms(given_ms);
    v_by := approval_gate.who(NULL);
    INSERT INTO approval_gate.allowances (id, record, granted_by, granted_ms)
        VALUES (v_id, record, v_by, v_now)
        ON CONFLICT (id) DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM approval_gate.append(v_now,
        CASE WHEN jsonb_array_length(record->'signatures')
                  < coalesce((record->>'requiredApprovals')::integer, 1)
             THEN 'allowance_proposed' ELSE 'allowance_granted' END,
        v_id, coalesce(details, '{}'::jsonb) || jsonb_build_object('grantedBy', v_by));
    RETURN true;
END
$$;

-- Adds one co-signer's signature (approvers) that the library verified against the allowance
-- as kept, under its row lock: 'added' with its `allowance_signed` line (whose details gain
-- `signatures`, how many it then carries), 'already' if that principal signed it before,
-- 'revoked' if it was revoked, 'unknown' if there is none.
CREATE OR REPLACE FUNCTION approval_gate.cosign_allowance(aid text, signature jsonb, details jsonb, given_ms bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_record jsonb;
    v_revoked bigint;
    v_now bigint;
    v_count integer;
BEGIN
    PERFORM approval_gate.require('sign allowances', ARRAY['approval_gate_approver']);
    IF jsonb_typeof(signature) IS DISTINCT FROM 'object'
       OR jsonb_typeof(signature->'principal') IS DISTINCT FROM 'string'
       OR jsonb_typeof(signature->'signature') IS DISTINCT FROM 'string'
       OR (SELECT count(*) FROM jsonb_object_keys(signature)) <> 2 THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = 'a signature is {principal, signature}';
    END IF;
    SELECT a.record, a.revoked_ms INTO v_record, v_revoked
        FROM approval_gate.allowances a WHERE a.id = aid FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'unknown';
    END IF;
    IF v_revoked IS NOT NULL THEN
        RETURN 'revoked';
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(v_record->'signatures') s
               WHERE s->>'principal' = signature->>'principal') THEN
        RETURN 'already';
    END IF;
    v_now := approval_gate.now_ms(given_ms);
    v_record := jsonb_set(v_record, '{signatures}', (v_record->'signatures') || jsonb_build_array(signature));
    v_count := jsonb_array_length(v_record->'signatures');
    UPDATE approval_gate.allowances SET record = v_record WHERE id = aid;
    PERFORM approval_gate.append(v_now, 'allowance_signed', aid,
        coalesce(details, '{}'::jsonb)
        || jsonb_build_object('signatures', v_count, 'signedBy', approval_gate.who(NULL)));
    RETURN 'added';
END
$$;

-- Revokes an allowance (approvers), under its row lock: 'revoked' with its
-- `allowance_revoked` line, 'before' if it was revoked already, 'unknown' if there is none.
CREATE OR REPLACE FUNCTION approval_gate.revoke_allowance(aid text, details jsonb, given_ms bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_revoked bigint;
    v_now bigint;
BEGIN
    PERFORM approval_gate.require('revoke allowances', ARRAY['approval_gate_approver']);
    SELECT a.revoked_ms INTO v_revoked FROM approval_gate.allowances a WHERE a.id = aid FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'unknown';
    END IF;
    IF v_revoked IS NOT NULL THEN
        RETURN 'before';
    END IF;
    v_now := approval_gate.now_ms(given_ms);
    UPDATE approval_gate.allowances SET revoked_ms = v_now WHERE id = aid;
    PERFORM approval_gate.append(v_now, 'allowance_revoked', aid,
        coalesce(details, '{}'::jsonb) || jsonb_build_object('revokedBy', approval_gate.who(NULL)));
    RETURN 'revoked';
END
$$;

-- Approves a pending request by an allowance that the library found to cover it (any role
-- that may file: the agent files it, and it is approved as it is filed): under the request's
-- row lock, only if the allowance exists, is not revoked and its window is open by the
-- database's clock. The database cannot check signatures or constraints: the library checks
-- them at filing and again at the consume, and `claim_under` counts the use; a request marked
-- so by hand is refused there. Returns the record as stored, with its `approved` row.
CREATE OR REPLACE FUNCTION approval_gate.allow_request(rid text, aid text, details jsonb, given_ms bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r approval_gate.requests;
    a approval_gate.allowances;
    v_now bigint;
    v_new jsonb;
    v_by text := 'allowance ' || aid;
    v_part int;
BEGIN
    PERFORM approval_gate.require('approve by an allowance',
        ARRAY['approval_gate_agent', 'approval_gate_approver', 'approval_gate_executor']);
    r := approval_gate.locked(rid);
    SELECT * INTO a FROM approval_gate.allowances WHERE id = aid FOR SHARE;
    v_now := approval_gate.now_ms(given_ms);
    IF r.status <> 'pending' THEN
        PERFORM approval_gate.wrong_state('approve', rid, r.status);
    END IF;
    IF v_now > r.expires_ms THEN
        RAISE EXCEPTION USING ERRCODE = 'AG002', MESSAGE = format('request %s expired', rid);
    END IF;
    IF a.id IS NULL OR a.revoked_ms IS NOT NULL
       OR v_now < approval_gate.ms_of(a.record->'allowance'->'bounds'->>'notBefore')
       OR v_now > approval_gate.ms_of(a.record->'allowance'->'bounds'->>'notAfter') THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005',
            MESSAGE = format('allowance %s is not one that approves anything now', aid);
    END IF;
    v_new := r.record || jsonb_build_object('status', 'approved',
        'decidedAt', approval_gate.ts_text(v_now), 'decidedBy', v_by, 'allowance', aid);
    UPDATE approval_gate.requests SET record = v_new, status = 'approved' WHERE id = rid;
    SELECT d.part INTO v_part FROM approval_gate.settled d ORDER BY d.part FOR UPDATE SKIP LOCKED LIMIT 1;
    UPDATE approval_gate.settled SET settled = settled + 1 WHERE part = coalesce(v_part, 0);
    PERFORM approval_gate.append(v_now, 'approved', rid,
        coalesce(details, '{}'::jsonb) || jsonb_build_object('decidedBy', v_by, 'allowance', aid));
    RETURN v_new::text;
END
$$;

-- The claim of a request an allowance approved (executors), with the use counted in the same
-- transaction: the allowance's row locked first, then the request's, then the clock; the
-- library has verified the allowance's signatures and constraints on the exact payload before
-- calling. Refuses, in this order: the request's status, another allowance than the record's,
-- a claim made (`already_consumed`, nothing written), the request's expiry, the allowance gone
-- or its window not open (`allowance_not_covering`), revoked (`revoked`), its window closed
-- (`approval_expired`), no use, budget or rate left (`allowance_exhausted`), each recorded as
-- `consume_refused`. Else counts the use (`allowance_uses`, `uses`, `spent`), claims, and
-- writes `consumed`: 'claimed'.
CREATE OR REPLACE FUNCTION approval_gate.claim_under(rid text, aid text, amount bigint, details jsonb,
    given_ms bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r approval_gate.requests;
    a approval_gate.allowances;
    b jsonb;
    v_now bigint;
    v_reason text;
BEGIN
    PERFORM approval_gate.require('consume approvals', ARRAY['approval_gate_executor']);
    SELECT * INTO a FROM approval_gate.allowances WHERE id = aid FOR UPDATE;
    r := approval_gate.locked(rid);
    v_now := approval_gate.now_ms(given_ms);
    b := a.record->'allowance'->'bounds';
    v_reason := CASE
        WHEN r.status = 'pending' AND v_now > r.expires_ms THEN 'expired'
        WHEN r.status = 'pending' THEN 'not_approved'
        WHEN r.status = 'denied' THEN 'denied'
        WHEN r.status = 'expired' THEN 'expired'
        WHEN r.status = 'revoked' THEN 'revoked'
        WHEN r.status <> 'approved' THEN 'not_approved'
        WHEN r.record->>'allowance' IS DISTINCT FROM aid THEN 'allowance_not_covering'
        WHEN r.claimed_ms IS NOT NULL THEN 'already_consumed'
        WHEN v_now > r.expires_ms THEN 'approval_expired'
        WHEN a.id IS NULL OR amount < 0 THEN 'allowance_not_covering'
        WHEN a.revoked_ms IS NOT NULL THEN 'revoked'
        WHEN v_now < approval_gate.ms_of(b->>'notBefore') THEN 'allowance_not_covering'
        WHEN v_now > approval_gate.ms_of(b->>'notAfter') THEN 'approval_expired'
        WHEN jsonb_typeof(b->'uses') = 'number' AND a.uses >= (b->>'uses')::bigint THEN 'allowance_exhausted'
        WHEN jsonb_typeof(b->'budget') = 'object' AND amount IS NULL THEN 'allowance_not_covering'
        WHEN jsonb_typeof(b->'budget') = 'object'
             AND a.spent + amount > (b->'budget'->>'total')::bigint THEN 'allowance_exhausted'
        WHEN jsonb_typeof(b->'rate') = 'object'
             AND (SELECT count(*) FROM approval_gate.allowance_uses u
                  WHERE u.allowance = aid
                    AND u.at_ms > v_now - (b->'rate'->>'periodSeconds')::bigint * 1000)
                 >= (b->'rate'->>'count')::bigint THEN 'allowance_exhausted'
    END;
    IF v_reason = 'already_consumed' THEN
        RETURN v_reason;
    END IF;
    IF v_reason IS NOT NULL THEN
        PERFORM approval_gate.append(v_now, 'consume_refused', rid,
            jsonb_build_object('reason', v_reason, 'detail', 'refused by the database',
                               'allowance', aid));
        RETURN v_reason;
    END IF;
    INSERT INTO approval_gate.allowance_uses (allowance, request, amount, at_ms)
        VALUES (aid, rid, amount, v_now);
    UPDATE approval_gate.allowances SET uses = uses + 1, spent = spent + coalesce(amount, 0)
        WHERE id = aid;
    UPDATE approval_gate.requests SET claimed_ms = v_now WHERE id = rid;
    PERFORM approval_gate.append(v_now, 'consumed', rid, details);
    RETURN 'claimed';
END
$$;

REVOKE ALL ON approval_gate.allowances, approval_gate.allowance_uses
    FROM PUBLIC, approval_gate_agent, approval_gate_approver, approval_gate_executor;
REVOKE ALL ON FUNCTION approval_gate.grant_allowance(jsonb, jsonb, bigint),
    approval_gate.revoke_allowance(text, jsonb, bigint),
    approval_gate.cosign_allowance(text, jsonb, jsonb, bigint),
    approval_gate.allow_request(text, text, jsonb, bigint),
    approval_gate.claim_under(text, text, bigint, jsonb, bigint)
    FROM PUBLIC, approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT SELECT ON approval_gate.allowances, approval_gate.allowance_uses
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.grant_allowance(jsonb, jsonb, bigint),
    approval_gate.revoke_allowance(text, jsonb, bigint),
    approval_gate.cosign_allowance(text, jsonb, jsonb, bigint)
    TO approval_gate_approver;
GRANT EXECUTE ON FUNCTION approval_gate.allow_request(text, text, jsonb, bigint)
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.claim_under(text, text, bigint, jsonb, bigint)
    TO approval_gate_executor;
