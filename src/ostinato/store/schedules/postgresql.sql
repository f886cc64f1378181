-- The schedules role's named queries for PostgreSQL (see store/schedules/flow.py and
-- docs/design/deadline-greedy.md); the same names as sqlite.sql.
-- %(named)s parameters, `now` from the caller. The state a run's end or a steal computes
-- comes from the domain's rules (domain/schedules.py); these queries only read, lock and write it.

-- name: insert_schedule
INSERT INTO schedule (name, kind, task_type, arguments, mode, scheduling_period, cooldown_duration, cron_schedule,
                      cron_max_schedule_duration, tz, enabled, max_expected_duration, max_allowed_duration,
                      blackout_periods, dont_run_on_nodes, created_at, last_good_start_at, last_good_end_at,
                      last_start_at, last_end_at, failure_count, average_good_duration, owner_started_at, owner_node,
                      owner_name, owner_tag, owner_last_ping_at, steal_start_at, can_start_by, should_start_by,
                      catch_up, catch_up_budget, retry_backoff, options, declared_by, declaration, fired_through,
                      next_fire_at, run_requested_at, expected_duration, partial_failure_threshold,
                      duration_spread, last_items_done, last_items_failed)
VALUES (%(name)s, %(kind)s, %(task_type)s, %(arguments)s::jsonb, %(mode)s, %(scheduling_period)s,
        %(cooldown_duration)s, %(cron_schedule)s, %(cron_max_schedule_duration)s, %(tz)s, %(enabled)s,
        %(max_expected_duration)s, %(max_allowed_duration)s, %(blackout_periods)s::jsonb, %(dont_run_on_nodes)s,
        %(created_at)s, %(last_good_start_at)s, %(last_good_end_at)s, %(last_start_at)s, %(last_end_at)s,
        %(failure_count)s, %(average_good_duration)s, %(owner_started_at)s, %(owner_node)s, %(owner_name)s,
        %(owner_tag)s, %(owner_last_ping_at)s, %(steal_start_at)s, %(can_start_by)s, %(should_start_by)s,
        %(catch_up)s, %(catch_up_budget)s, %(retry_backoff)s::jsonb, %(options)s::jsonb, %(declared_by)s, %(declaration)s,
        %(fired_through)s, %(next_fire_at)s, %(run_requested_at)s, %(expected_duration)s,
        %(partial_failure_threshold)s, %(duration_spread)s, %(last_items_done)s, %(last_items_failed)s)
ON CONFLICT (name) DO NOTHING
RETURNING name;

-- name: update_schedule
-- the whole row from the domain's view of it; only while its ownership is what the caller read
UPDATE schedule SET kind = %(kind)s, task_type = %(task_type)s, arguments = %(arguments)s::jsonb, mode = %(mode)s,
    scheduling_period = %(scheduling_period)s, cooldown_duration = %(cooldown_duration)s,
    cron_schedule = %(cron_schedule)s, cron_max_schedule_duration = %(cron_max_schedule_duration)s, tz = %(tz)s,
    enabled = %(enabled)s, max_expected_duration = %(max_expected_duration)s,
    max_allowed_duration = %(max_allowed_duration)s, blackout_periods = %(blackout_periods)s::jsonb,
    dont_run_on_nodes = %(dont_run_on_nodes)s, last_good_start_at = %(last_good_start_at)s,
    last_good_end_at = %(last_good_end_at)s, last_start_at = %(last_start_at)s, last_end_at = %(last_end_at)s,
    failure_count = %(failure_count)s, average_good_duration = %(average_good_duration)s,
    owner_started_at = %(owner_started_at)s, owner_node = %(owner_node)s, owner_name = %(owner_name)s,
    owner_tag = %(owner_tag)s, owner_last_ping_at = %(owner_last_ping_at)s, steal_start_at = %(steal_start_at)s,
    can_start_by = %(can_start_by)s, should_start_by = %(should_start_by)s, catch_up = %(catch_up)s,
    catch_up_budget = %(catch_up_budget)s, retry_backoff = %(retry_backoff)s::jsonb, options = %(options)s::jsonb,
    declared_by = %(declared_by)s, declaration = %(declaration)s, fired_through = %(fired_through)s,
    next_fire_at = %(next_fire_at)s, run_requested_at = %(run_requested_at)s,
    expected_duration = %(expected_duration)s, partial_failure_threshold = %(partial_failure_threshold)s,
    duration_spread = %(duration_spread)s, last_items_done = %(last_items_done)s,
    last_items_failed = %(last_items_failed)s
WHERE name = %(name)s AND owner_tag IS NOT DISTINCT FROM %(expected_tag)s;

-- name: update_run_state
-- a run's end (or a steal's): only the state the domain moved (run times, failures, the average and
-- the spread, the last good run's items, the released ownership) and the new start times; the definition is left as it is
UPDATE schedule SET last_good_start_at = %(last_good_start_at)s, last_good_end_at = %(last_good_end_at)s,
    last_start_at = %(last_start_at)s, last_end_at = %(last_end_at)s, failure_count = %(failure_count)s,
    average_good_duration = %(average_good_duration)s, owner_started_at = %(owner_started_at)s,
    owner_node = %(owner_node)s, owner_name = %(owner_name)s, owner_tag = %(owner_tag)s,
    owner_last_ping_at = %(owner_last_ping_at)s, steal_start_at = %(steal_start_at)s,
    can_start_by = %(can_start_by)s, should_start_by = %(should_start_by)s, fired_through = %(fired_through)s,
    next_fire_at = %(next_fire_at)s, run_requested_at = %(run_requested_at)s,
    duration_spread = %(duration_spread)s, last_items_done = %(last_items_done)s,
    last_items_failed = %(last_items_failed)s
WHERE name = %(name)s AND owner_tag IS NOT DISTINCT FROM %(expected_tag)s;

-- name: schedule_for_update
SELECT * FROM schedule WHERE name = %(name)s FOR UPDATE;

-- name: get_schedule
SELECT * FROM schedule WHERE name = %(name)s;

-- name: list_schedules
SELECT * FROM schedule WHERE name > %(after)s ORDER BY name LIMIT %(limit)s;

-- name: delete_schedule
DELETE FROM schedule WHERE name = %(name)s RETURNING name;

-- name: delete_schedule_runs
DELETE FROM schedule_run WHERE schedule = %(name)s;

-- name: pick_schedule
-- the deadline-greedy pick: not running, not excluded on this node, can_start_by past, lowest should_start_by;
-- a walk of schedule_pick_idx, used when many can start (else pick_few_schedules).
-- Names only: take_ownership returns the rows as it writes them
SELECT name FROM schedule
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= %(now)s
  AND NOT (%(node)s = ANY(dont_run_on_nodes))
ORDER BY should_start_by
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: count_startable
-- how many schedules can start now, counted up to the window: a walk of schedule_wake_idx
SELECT count(*) AS n FROM (
    SELECT 1 FROM schedule
    WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= %(now)s
    ORDER BY can_start_by
    LIMIT %(window)s) AS startable;

-- name: pick_few_schedules
-- the same pick when fewer than the window can start: all of them through schedule_wake_idx, sorted
SELECT name FROM schedule
WHERE name IN (SELECT name FROM schedule
               WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= %(now)s
               ORDER BY can_start_by
               LIMIT %(window)s)
  AND enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= %(now)s
  AND NOT (%(node)s = ANY(dont_run_on_nodes))
ORDER BY should_start_by
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: take_ownership
-- returns the schedules as now owned (the one place the ownership a pick gives is written)
UPDATE schedule AS s SET owner_started_at = %(now)s, owner_node = %(node)s, owner_name = %(owner_name)s,
    owner_tag = k.tag, owner_last_ping_at = %(now)s, steal_start_at = NULL
FROM unnest(%(names)s::text[], %(tags)s::text[]) AS k(name, tag)
WHERE s.name = k.name AND s.owner_tag IS NULL
RETURNING s.*;

-- name: insert_schedule_runs
-- returns the runs as opened
INSERT INTO schedule_run (schedule, owner_tag, owner_node, owner_name, started_at, status, detail)
SELECT k.name, k.tag, %(node)s, %(owner_name)s, %(now)s, 'running', '{}'
FROM unnest(%(names)s::text[], %(tags)s::text[]) AS k(name, tag)
RETURNING *;

-- name: end_schedule_run
UPDATE schedule_run SET ended_at = %(ended)s, status = %(status)s, detail = detail || %(detail)s::jsonb
WHERE owner_tag = %(tag)s AND status = 'running';

-- name: ping_schedule
-- the owner's ping: refreshes its sign of life and clears a steal mark; no row means stolen
UPDATE schedule SET owner_last_ping_at = %(now)s, steal_start_at = NULL
WHERE name = %(name)s AND owner_tag = %(tag)s
RETURNING name;

-- name: next_can_start_by
SELECT min(can_start_by) AS at FROM schedule
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL;

-- name: silent_owners
-- running schedules with no sign of life since the cutoff: the last ping, or the run's start when
-- no ping was recorded (as domain.schedules.last_sign_of_life reads it)
SELECT * FROM schedule
WHERE owner_tag IS NOT NULL
  AND (owner_last_ping_at < %(cutoff)s OR (owner_last_ping_at IS NULL AND owner_started_at < %(cutoff)s))
ORDER BY COALESCE(owner_last_ping_at, owner_started_at)
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: mark_steal
UPDATE schedule SET steal_start_at = %(now)s WHERE name = %(name)s AND owner_tag = %(tag)s;

-- name: owned_by_node
SELECT * FROM schedule WHERE owner_tag IS NOT NULL AND owner_node = %(node)s FOR UPDATE;

-- name: schedule_runs
SELECT * FROM schedule_run
WHERE schedule = %(name)s AND id < %(before_id)s
ORDER BY id DESC LIMIT %(limit)s;

-- name: insert_declaration
-- a source's set of declarations, first seen now (kept as it was when seen before)
INSERT INTO schedule_declaration (source, fingerprint, first_seen_at, schedules)
VALUES (%(source)s, %(fingerprint)s, %(now)s, %(schedules)s)
ON CONFLICT (source, fingerprint) DO NOTHING;

-- name: force_declaration
-- a set applied with force: seen now, so that it is the newest
INSERT INTO schedule_declaration (source, fingerprint, first_seen_at, schedules)
VALUES (%(source)s, %(fingerprint)s, %(now)s, %(schedules)s)
ON CONFLICT (source, fingerprint) DO UPDATE SET first_seen_at = excluded.first_seen_at;

-- name: newest_declaration
SELECT fingerprint, first_seen_at FROM schedule_declaration WHERE source = %(source)s
ORDER BY first_seen_at DESC, fingerprint DESC
LIMIT 1;

-- name: declared_schedules
-- the schedules a source declared, and those under the names it declares now
SELECT * FROM schedule
WHERE declared_by = %(source)s OR name = ANY(%(names)s::text[])
FOR UPDATE;

-- name: backlogged_schedules
-- calendar schedules whose next fire time is older than the grace: a walk of schedule_backlog_idx
SELECT * FROM schedule
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND kind = 'calendar' AND can_start_by <= %(cutoff)s
ORDER BY can_start_by
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: insert_firings
-- the ledger rows, one array per column; a fire time already in the ledger is left as it is;
-- returns the rows added
INSERT INTO schedule_firing (schedule, nominal_at, status, last_at, firings, claimed_by, lease_until, sender,
                             handled_at, sent_at)
SELECT * FROM unnest(%(schedule)s::text[], %(nominal_at)s::timestamptz[], %(status)s::text[],
                     %(last_at)s::timestamptz[], %(firings)s::integer[], %(claimed_by)s::text[],
                     %(lease_until)s::timestamptz[], %(sender)s::text[], %(handled_at)s::timestamptz[],
                     %(sent_at)s::timestamptz[])
ON CONFLICT (schedule, nominal_at) DO NOTHING
RETURNING *;

-- name: schedule_firings
SELECT * FROM schedule_firing
WHERE schedule = %(name)s AND nominal_at < %(before)s
ORDER BY nominal_at DESC LIMIT %(limit)s;

-- name: due_to_send
-- the schedules the beats send whose next fire time has come: a walk of schedule_fire_idx
SELECT * FROM schedule
WHERE enabled AND next_fire_at IS NOT NULL AND next_fire_at <= %(now)s
ORDER BY next_fire_at
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: expired_claims
-- fire times claimed by a beat whose lease ended (it died, or paused): a walk of schedule_firing_lease_idx
SELECT f.schedule, f.nominal_at, s.task_type, s.arguments, s.options
FROM schedule_firing AS f
JOIN schedule AS s ON s.name = f.schedule
WHERE f.status = 'claimed' AND f.lease_until <= %(now)s
ORDER BY f.lease_until
LIMIT %(limit)s
FOR UPDATE OF f SKIP LOCKED;

-- name: take_claims
-- only claims still expired are taken over
UPDATE schedule_firing AS f SET claimed_by = %(tag)s, lease_until = %(lease_until)s, sender = %(sender)s,
    handled_at = %(now)s
FROM unnest(%(schedule)s::text[], %(nominal_at)s::timestamptz[]) AS k(schedule, nominal_at)
WHERE f.schedule = k.schedule AND f.nominal_at = k.nominal_at AND f.status = 'claimed' AND f.lease_until <= %(now)s
RETURNING f.schedule, f.nominal_at;

-- name: mark_sent
-- the fire times this claim (tag) sent
UPDATE schedule_firing AS f SET status = 'sent', sent_at = %(now)s
FROM unnest(%(schedule)s::text[], %(nominal_at)s::timestamptz[]) AS k(schedule, nominal_at)
WHERE f.schedule = k.schedule AND f.nominal_at = k.nominal_at AND f.claimed_by = %(tag)s AND f.status = 'claimed';

-- name: release_claims
-- the fire times this claim (tag) will not send: another beat may at once
UPDATE schedule_firing AS f SET lease_until = %(now)s
FROM unnest(%(schedule)s::text[], %(nominal_at)s::timestamptz[]) AS k(schedule, nominal_at)
WHERE f.schedule = k.schedule AND f.nominal_at = k.nominal_at AND f.claimed_by = %(tag)s AND f.status = 'claimed';

-- name: next_send_at
-- the next fire time to send, or the next claim whose lease ends (how long a beat may sleep)
SELECT min(at) AS at FROM (
    SELECT min(next_fire_at) AS at FROM schedule WHERE enabled AND next_fire_at IS NOT NULL
    UNION ALL
    SELECT min(lease_until) FROM schedule_firing WHERE status = 'claimed') AS soonest;

-- name: delete_schedule_firings
DELETE FROM schedule_firing WHERE schedule = %(name)s;

-- Lookahead and the other pick orders (domain/lookahead.py): the snapshot a pick plans from, the few
-- columns it plans with (store/schedules/picks.py, PickFlow._candidate).

-- name: candidates_by_deadline
-- the K most urgent schedules that can start on this node (on any node: node null), when many can:
-- a walk of schedule_pick_idx
SELECT name, can_start_by, should_start_by, average_good_duration, expected_duration, scheduling_period, cron_schedule, tz,
       dont_run_on_nodes FROM schedule
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= %(now)s
  AND (%(node)s::text IS NULL OR NOT (%(node)s = ANY(dont_run_on_nodes)))
ORDER BY should_start_by
LIMIT %(limit)s;

-- name: few_candidates_by_deadline
-- the same when fewer than the window can start: all of them through schedule_wake_idx, the K most
-- urgent kept (as pick_few_schedules)
SELECT name, can_start_by, should_start_by, average_good_duration, expected_duration, scheduling_period, cron_schedule, tz,
       dont_run_on_nodes FROM schedule
WHERE name IN (SELECT name FROM schedule
               WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= %(now)s
               ORDER BY can_start_by
               LIMIT %(window)s)
  AND enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= %(now)s
  AND (%(node)s::text IS NULL OR NOT (%(node)s = ANY(dont_run_on_nodes)))
ORDER BY should_start_by
LIMIT %(limit)s;

-- name: candidates_by_due
-- the K first due that can start on this node, or on any (all of them, up to the window, when few can: sorted
-- by the rule's order afterwards): a walk of schedule_wake_idx
SELECT name, can_start_by, should_start_by, average_good_duration, expected_duration, scheduling_period, cron_schedule, tz,
       dont_run_on_nodes FROM schedule
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= %(now)s
  AND (%(node)s::text IS NULL OR NOT (%(node)s = ANY(dont_run_on_nodes)))
ORDER BY can_start_by
LIMIT %(limit)s;

-- name: upcoming_schedules
-- the K next due within the horizon, whichever node may run them: a walk of schedule_wake_idx
SELECT name, can_start_by, should_start_by, average_good_duration, expected_duration, scheduling_period, cron_schedule, tz,
       dont_run_on_nodes FROM schedule
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by > %(now)s
  AND can_start_by <= %(until)s
ORDER BY can_start_by
LIMIT %(limit)s;

-- name: heartbeat_scheduler
INSERT INTO scheduler_node (node, instance, slots, run_ends, seen_at)
VALUES (%(node)s, %(instance)s, %(slots)s, %(run_ends)s::timestamptz[], %(now)s)
ON CONFLICT (node, instance) DO UPDATE SET slots = excluded.slots, run_ends = excluded.run_ends,
    seen_at = excluded.seen_at;

-- name: forget_schedulers
-- schedulers silent for long (many node timeouts): gone
DELETE FROM scheduler_node WHERE seen_at < %(cutoff)s;

-- name: list_schedulers
SELECT node, instance, slots, run_ends, seen_at FROM scheduler_node WHERE seen_at >= %(cutoff)s ORDER BY node, instance;

-- name: list_holds
SELECT * FROM schedule_hold WHERE expires_at > %(now)s ORDER BY due_at, waits_for;

-- name: holds_for
SELECT * FROM schedule_hold WHERE waits_for = %(name)s AND expires_at > %(now)s ORDER BY due_at;

-- name: drop_holds
-- a scheduler's holds, replaced at each of its picks that held or holds
DELETE FROM schedule_hold WHERE node = %(node)s AND instance = %(instance)s;

-- name: purge_holds
-- holds expired long ago (at a heartbeat: the reads skip any expired one)
DELETE FROM schedule_hold WHERE expires_at <= %(cutoff)s;

-- name: insert_holds
INSERT INTO schedule_hold (node, instance, waits_for, due_at, expires_at, held_at)
SELECT %(node)s, %(instance)s, k.name, k.due_at, k.expires_at, %(now)s
FROM unnest(%(names)s::text[], %(due)s::timestamptz[], %(expires)s::timestamptz[]) AS k(name, due_at, expires_at)
ON CONFLICT DO NOTHING;

-- name: lock_chosen
-- the schedules a pick by rule chose, still free, locked in name order (two pickers never wait on each
-- other in a cycle); those another picker holds are skipped: it is taking them
SELECT name FROM schedule WHERE name = ANY(%(names)s::text[]) AND owner_tag IS NULL
ORDER BY name
FOR UPDATE SKIP LOCKED;
