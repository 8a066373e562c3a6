-- ------------------------------------------------------------------------------ allowances
--
-- An allowance a human signed (issue 41): `record` is the signed allowance as the library
-- keeps it (the terms, the quorum, the signatures), written once by `grant_allowance` and never
-- changed; the database cannot verify SSH signatures, so the library verifies them offline at
-- the grant and again at every use. Only an approver may grant or revoke one; every role may
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
-- `allowance_granted` line, or FALSE (nothing written) if its id is taken.
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
    PERFORM approval_gate.append(v_now, 'allowance_granted', v_id,
        coalesce(details, '{}'::jsonb) || jsonb_build_object('grantedBy', v_by));
    RETURN true;
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

REVOKE ALL ON approval_gate.allowances, approval_gate.allowance_uses
    FROM PUBLIC, approval_gate_agent, approval_gate_approver, approval_gate_executor;
REVOKE ALL ON FUNCTION approval_gate.grant_allowance(jsonb, jsonb, bigint),
    approval_gate.revoke_allowance(text, jsonb, bigint)
    FROM PUBLIC, approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT SELECT ON approval_gate.allowances, approval_gate.allowance_uses
    TO approval_gate_agent, approval_gate_approver, approval_gate_executor;
GRANT EXECUTE ON FUNCTION approval_gate.grant_allowance(jsonb, jsonb, bigint),
    approval_gate.revoke_allowance(text, jsonb, bigint)
    TO approval_gate_approver;
