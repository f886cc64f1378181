-- 0025: lookahead in the schedule pick (domain/lookahead.py).
--
-- scheduler_node: the live schedulers, by heartbeat: each one's slots and the expected ends of its
-- runs in flight, so that a pick can plan with every live scheduler's capacity. A row older than the
-- node timeout is ignored, and removed by a later heartbeat of any scheduler.
-- schedule_hold: a free slot a scheduler keeps for a schedule due soon. A stored, expiring record,
-- never a lease: a scheduler that dies holding one frees it when it expires.
CREATE TABLE scheduler_node (
    node text NOT NULL,
    instance text NOT NULL,
    slots integer NOT NULL CHECK (slots >= 1),
    run_ends timestamptz[] NOT NULL DEFAULT '{}',
    seen_at timestamptz NOT NULL,
    PRIMARY KEY (node, instance)
);
CREATE TABLE schedule_hold (
    node text NOT NULL,
    instance text NOT NULL,
    waits_for text NOT NULL,
    due_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    held_at timestamptz NOT NULL,
    PRIMARY KEY (node, instance, waits_for)
);
CREATE INDEX schedule_hold_waits_idx ON schedule_hold (waits_for);
