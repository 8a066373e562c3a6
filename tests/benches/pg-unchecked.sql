-- For `pg-floor.sh 10 unchecked` only, never for a store: the schema with the checks its steps
-- make for authority replaced by no-ops, to measure what those checks cost a cycle. The
-- session's roles (`require`), the record's fields (`check_record`), the bounds of an audit
-- line's details (`clean_details`, which still adds the session user) and the check of the
-- chain's end before each append (`append`) are all gone here; what is left is what the steps
-- write and how they are sealed and woken.
CREATE OR REPLACE FUNCTION approval_gate.require(what text, roles text[]) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN true;
END
$$;
CREATE OR REPLACE FUNCTION approval_gate.check_record(rec jsonb, rid text, payload text,
                                                      decision_only boolean) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
END
$$;
CREATE OR REPLACE FUNCTION approval_gate.clean_details(details jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN coalesce(details, '{}'::jsonb) || jsonb_build_object('sessionUser', session_user::text);
END
$$;
CREATE OR REPLACE FUNCTION approval_gate.append(at_ms bigint, event text, rid text, details jsonb)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_pos bigint;
BEGIN
    INSERT INTO approval_gate.audit (at_ms, id, event, details)
        VALUES (at_ms, rid, event, approval_gate.clean_details(details))
        RETURNING pos INTO v_pos;
    RETURN v_pos;
END
$$;
