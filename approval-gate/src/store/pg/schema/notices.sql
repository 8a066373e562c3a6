-- ------------------------------------------------------------------ the notifications ledger
-- Added by version 5. `approval-gate notify` derives what is due from the pending requests
-- and keeps here, by delivery key (`<request id>.<channel>.<kind>`), what it delivered or
-- gave up on (a dead letter), and which notifier holds a lease on a message being sent, so
-- that several notifiers over one store send each message once and a crashed one's lease runs
-- out. Written only through the two functions below, by `approval_gate_notifier`: a role that
-- can write this table can suppress or repeat notifications, never decide anything.
CREATE TABLE IF NOT EXISTS approval_gate.notices (
    key      text PRIMARY KEY CHECK (key ~ '^[a-z0-9._-]{1,100}$'),
    state    text NOT NULL CHECK (state IN ('leased', 'delivered', 'dead')),
    holder   text NOT NULL,
    until_ms bigint NOT NULL,
    at_ms    bigint NOT NULL,
    by       text NOT NULL,
    reason   text,
    attempts integer
);
CREATE INDEX IF NOT EXISTS notices_dead ON approval_gate.notices (at_ms) WHERE state = 'dead';

-- Claims `key` for the notifier `holder` (a token of its own) for `lease_ms` from now:
-- 'mine' (a new key, an expired lease, or the holder's own lease, renewed), 'delivered',
-- 'dead', or 'busy' (another holder's lease runs). The row is locked while it is read.
CREATE OR REPLACE FUNCTION approval_gate.claim_notice(k text, holder text, lease_ms bigint, given_ms bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_now bigint;
    r approval_gate.notices;
BEGIN
    PERFORM approval_gate.require('deliver notifications', ARRAY['approval_gate_notifier']);
    IF lease_ms IS NULL OR lease_ms < 0 OR holder IS NULL OR length(holder) NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = 'a lease is a holder and a length from 0 ms';
    END IF;
    v_now := approval_gate.now_ms(given_ms);
    INSERT INTO approval_gate.notices (key, state, holder, until_ms, at_ms, by)
        VALUES (k, 'leased', holder, v_now + lease_ms, v_now, session_user)
        ON CONFLICT (key) DO NOTHING;
    IF FOUND THEN
        RETURN 'mine';
    END IF;
    SELECT * INTO r FROM approval_gate.notices n WHERE n.key = k FOR UPDATE;
    IF r.state <> 'leased' THEN
        RETURN r.state;
    END IF;
    IF r.holder <> holder AND r.until_ms > v_now THEN
        RETURN 'busy';
    END IF;
    UPDATE approval_gate.notices n SET holder = claim_notice.holder, until_ms = v_now + lease_ms,
        at_ms = v_now, by = session_user WHERE n.key = k;
    RETURN 'mine';
END
$$;

-- Records `key` as 'delivered' or 'dead' (with why and after how many attempts), whoever
-- held its lease: an outcome is final, and a dead letter stays one.
CREATE OR REPLACE FUNCTION approval_gate.record_notice(k text, outcome text, why text, tries integer, given_ms bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_now bigint;
BEGIN
    PERFORM approval_gate.require('deliver notifications', ARRAY['approval_gate_notifier']);
    IF outcome NOT IN ('delivered', 'dead') THEN
        RAISE EXCEPTION USING ERRCODE = 'AG005', MESSAGE = format('unknown outcome %s', outcome);
    END IF;
    v_now := approval_gate.now_ms(given_ms);
    INSERT INTO approval_gate.notices AS n (key, state, holder, until_ms, at_ms, by, reason, attempts)
        VALUES (k, outcome, '', v_now, v_now, session_user, left(why, 500), tries)
        ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, until_ms = EXCLUDED.until_ms,
            at_ms = EXCLUDED.at_ms, by = EXCLUDED.by, reason = EXCLUDED.reason,
            attempts = EXCLUDED.attempts
        WHERE n.state <> 'dead';
END
$$;

