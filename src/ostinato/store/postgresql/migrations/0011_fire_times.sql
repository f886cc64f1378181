-- 0011: fire times, catch-up rules, schedules declared in code, and the beats' ledger.
--
-- A schedule gains its catch-up rule (latest, all up to a budget, or skip), its own
-- retry backoff, Celery's options of a send, who declares it in code and with which
-- fingerprint, the last fire time handled (fired_through) and, for the schedules the
-- beat processes send (mode 'send'), the next fire time to send (next_fire_at).
-- schedule_firing is the ledger of fire times, one row per (schedule, fire time):
-- its primary key is what makes a fire time sent at most once.

ALTER TABLE schedule DROP CONSTRAINT schedule_mode_check;
ALTER TABLE schedule ADD CONSTRAINT schedule_mode_check CHECK (mode IN ('run', 'submit', 'send'));
ALTER TABLE schedule
    ADD COLUMN catch_up text NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest', 'all', 'skip')),
    ADD COLUMN catch_up_budget integer,
    ADD COLUMN retry_backoff jsonb,
    ADD COLUMN options jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN declared_by text,
    ADD COLUMN declaration text,
    ADD COLUMN fired_through timestamptz,
    ADD COLUMN next_fire_at timestamptz;

-- the catch-up pass: calendar schedules whose next fire time is overdue
CREATE INDEX schedule_backlog_idx ON schedule (can_start_by)
    WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND kind = 'calendar';
-- the beats' claim: schedules they send, by their next fire time
CREATE INDEX schedule_fire_idx ON schedule (next_fire_at)
    WHERE enabled AND next_fire_at IS NOT NULL;
-- the schedules one source declares in code
CREATE INDEX schedule_declared_by_idx ON schedule (declared_by)
    WHERE declared_by IS NOT NULL;

-- each set of declarations a source made, and when it was first seen: the newest wins
CREATE TABLE schedule_declaration (
    source text NOT NULL,
    fingerprint text NOT NULL,
    first_seen_at timestamptz NOT NULL,
    schedules integer NOT NULL,
    PRIMARY KEY (source, fingerprint)
);

-- the ledger of fire times: claimed (a beat sends it, until lease_until), sent (the broker
-- took it) or skipped (by the catch-up rule: a run of consecutive fire times, through
-- last_at, firings of them, NULL when too many to count)
CREATE TABLE schedule_firing (
    schedule text NOT NULL,
    nominal_at timestamptz NOT NULL,
    status text NOT NULL CHECK (status IN ('claimed', 'sent', 'skipped')),
    last_at timestamptz,
    firings integer,
    claimed_by text,
    lease_until timestamptz,
    sender text,
    handled_at timestamptz NOT NULL,
    sent_at timestamptz,
    PRIMARY KEY (schedule, nominal_at)
);
-- claims whose beat went silent, by the end of their lease
CREATE INDEX schedule_firing_lease_idx ON schedule_firing (lease_until)
    WHERE status = 'claimed';
