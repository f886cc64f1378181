-- 0025: lookahead in the schedule pick (domain/lookahead.py).
--
-- scheduler_node: the live schedulers, by heartbeat: each one's slots and the expected ends of its
-- runs in flight (a JSON list of times), so that a pick can plan with every live scheduler's
-- capacity. A row older than the node timeout is ignored, and removed by a later heartbeat.
-- schedule_hold: a free slot a scheduler keeps for a schedule due soon. A stored, expiring record,
-- never a lease: a scheduler that dies holding one frees it when it expires.
CREATE TABLE scheduler_node (
    node TEXT NOT NULL,
    instance TEXT NOT NULL,
    slots INTEGER NOT NULL CHECK (slots >= 1),
    run_ends TEXT NOT NULL DEFAULT '[]',
    seen_at TEXT NOT NULL,
    PRIMARY KEY (node, instance)
) STRICT;
CREATE TABLE schedule_hold (
    node TEXT NOT NULL,
    instance TEXT NOT NULL,
    waits_for TEXT NOT NULL,
    due_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    held_at TEXT NOT NULL,
    PRIMARY KEY (node, instance, waits_for)
) STRICT;
CREATE INDEX schedule_hold_waits_idx ON schedule_hold (waits_for);
