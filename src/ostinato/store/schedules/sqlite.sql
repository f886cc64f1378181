-- The schedules role's named queries for SQLite (see store/schedules/flow.py and
-- docs/design/deadline-greedy.md); the same names as postgresql.sql.
-- :named parameters, times as ISO 8601 text in UTC, durations in seconds, lists as JSON
-- text; `now` from the caller. The state a run's end or a steal computes comes from the
-- domain's rules (domain/schedules.py); these queries only read, lock and write it.

-- name: insert_schedule
INSERT INTO schedule (name, kind, task_type, arguments, mode, scheduling_period, cooldown_duration, cron_schedule,
                      cron_max_schedule_duration, tz, enabled, max_expected_duration, max_allowed_duration,
                      blackout_periods, dont_run_on_nodes, created_at, last_good_start_at, last_good_end_at,
                      last_start_at, last_end_at, failure_count, average_good_duration, owner_started_at, owner_node,
                      owner_name, owner_tag, owner_last_ping_at, steal_start_at, can_start_by, should_start_by,
                      catch_up, catch_up_budget, retry_backoff, options, declared_by, declaration, fired_through,
                      next_fire_at, run_requested_at, expected_duration, partial_failure_threshold,
                      duration_spread, last_items_done, last_items_failed)
VALUES (:name, :kind, :task_type, :arguments, :mode, :scheduling_period,
        :cooldown_duration, :cron_schedule, :cron_max_schedule_duration, :tz, :enabled,
        :max_expected_duration, :max_allowed_duration, :blackout_periods, :dont_run_on_nodes,
        :created_at, :last_good_start_at, :last_good_end_at, :last_start_at, :last_end_at,
        :failure_count, :average_good_duration, :owner_started_at, :owner_node, :owner_name,
        :owner_tag, :owner_last_ping_at, :steal_start_at, :can_start_by, :should_start_by,
        :catch_up, :catch_up_budget, :retry_backoff, :options, :declared_by, :declaration,
        :fired_through, :next_fire_at, :run_requested_at, :expected_duration,
        :partial_failure_threshold, :duration_spread, :last_items_done, :last_items_failed)
ON CONFLICT (name) DO NOTHING
RETURNING name;

-- name: update_schedule
-- the whole row from the domain's view of it; only while its ownership is what the caller read
UPDATE schedule SET kind = :kind, task_type = :task_type, arguments = :arguments, mode = :mode,
    scheduling_period = :scheduling_period, cooldown_duration = :cooldown_duration,
    cron_schedule = :cron_schedule, cron_max_schedule_duration = :cron_max_schedule_duration, tz = :tz,
    enabled = :enabled, max_expected_duration = :max_expected_duration,
    max_allowed_duration = :max_allowed_duration, blackout_periods = :blackout_periods,
    dont_run_on_nodes = :dont_run_on_nodes, last_good_start_at = :last_good_start_at,
    last_good_end_at = :last_good_end_at, last_start_at = :last_start_at, last_end_at = :last_end_at,
    failure_count = :failure_count, average_good_duration = :average_good_duration,
    owner_started_at = :owner_started_at, owner_node = :owner_node, owner_name = :owner_name,
    owner_tag = :owner_tag, owner_last_ping_at = :owner_last_ping_at, steal_start_at = :steal_start_at,
    can_start_by = :can_start_by, should_start_by = :should_start_by, catch_up = :catch_up,
    catch_up_budget = :catch_up_budget, retry_backoff = :retry_backoff, options = :options,
    declared_by = :declared_by, declaration = :declaration, fired_through = :fired_through,
    next_fire_at = :next_fire_at, run_requested_at = :run_requested_at,
    expected_duration = :expected_duration, partial_failure_threshold = :partial_failure_threshold,
    duration_spread = :duration_spread, last_items_done = :last_items_done,
    last_items_failed = :last_items_failed
WHERE name = :name AND owner_tag IS :expected_tag;

-- name: update_run_state
-- a run's end (or a steal's): only the state the domain moved (run times, failures, the average and
-- the spread, the last good run's items, the released ownership) and the new start times; the definition is left as it is
UPDATE schedule SET last_good_start_at = :last_good_start_at, last_good_end_at = :last_good_end_at,
    last_start_at = :last_start_at, last_end_at = :last_end_at, failure_count = :failure_count,
    average_good_duration = :average_good_duration, owner_started_at = :owner_started_at,
    owner_node = :owner_node, owner_name = :owner_name, owner_tag = :owner_tag,
    owner_last_ping_at = :owner_last_ping_at, steal_start_at = :steal_start_at,
    can_start_by = :can_start_by, should_start_by = :should_start_by, fired_through = :fired_through,
    next_fire_at = :next_fire_at, run_requested_at = :run_requested_at,
    duration_spread = :duration_spread, last_items_done = :last_items_done,
    last_items_failed = :last_items_failed
WHERE name = :name AND owner_tag IS :expected_tag;

-- name: schedule_for_update
SELECT * FROM schedule WHERE name = :name;

-- name: get_schedule
SELECT * FROM schedule WHERE name = :name;

-- name: list_schedules
SELECT * FROM schedule WHERE name > :after ORDER BY name LIMIT :limit;

-- name: delete_schedule
DELETE FROM schedule WHERE name = :name RETURNING name;

-- name: delete_schedule_runs
DELETE FROM schedule_run WHERE schedule = :name;

-- name: pick_schedule
-- the deadline-greedy pick: not running, not excluded on this node, can_start_by past, lowest should_start_by;
-- the walk of schedule_pick_idx is pinned: without statistics SQLite would range-scan the
-- wake index and sort every due schedule; used when many can start (else pick_few_schedules).
-- Names only: take_ownership returns the rows as it writes them
SELECT name FROM schedule INDEXED BY schedule_pick_idx
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= :now
  AND :node NOT IN (SELECT value FROM json_each(dont_run_on_nodes))
ORDER BY should_start_by
LIMIT :limit;

-- name: count_startable
-- how many schedules can start now, counted up to the window: a walk of schedule_wake_idx
SELECT count(*) AS n FROM (
    SELECT 1 FROM schedule INDEXED BY schedule_wake_idx
    WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= :now
    ORDER BY can_start_by
    LIMIT :window);

-- name: pick_few_schedules
-- the same pick when fewer than the window can start: all of them through schedule_wake_idx, sorted
SELECT name FROM schedule
WHERE name IN (SELECT name FROM schedule INDEXED BY schedule_wake_idx
               WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= :now
               ORDER BY can_start_by
               LIMIT :window)
  AND enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= :now
  AND :node NOT IN (SELECT value FROM json_each(dont_run_on_nodes))
ORDER BY should_start_by
LIMIT :limit;

-- name: take_ownership
-- rows: JSON array of [name, tag]; returns the schedules as now owned (the one place the
-- ownership a pick gives is written)
UPDATE schedule SET owner_started_at = :now, owner_node = :node, owner_name = :owner_name, owner_tag = k.tag,
    owner_last_ping_at = :now, steal_start_at = NULL
FROM (SELECT value ->> 0 AS name, value ->> 1 AS tag FROM json_each(:rows)) AS k
WHERE schedule.name = k.name AND schedule.owner_tag IS NULL
RETURNING *;

-- name: insert_schedule_runs
-- rows: JSON array of [name, tag]; returns the runs as opened
INSERT INTO schedule_run (schedule, owner_tag, owner_node, owner_name, started_at, status, detail)
SELECT k.value ->> 0, k.value ->> 1, :node, :owner_name, :now, 'running', '{}' FROM json_each(:rows) AS k WHERE true
RETURNING *;

-- name: end_schedule_run
UPDATE schedule_run SET ended_at = :ended, status = :status, detail = json_patch(detail, :detail)
WHERE owner_tag = :tag AND status = 'running';

-- name: ping_schedule
-- the owner's ping: refreshes its sign of life and clears a steal mark; no row means stolen
UPDATE schedule SET owner_last_ping_at = :now, steal_start_at = NULL
WHERE name = :name AND owner_tag = :tag
RETURNING name;

-- name: next_can_start_by
SELECT min(can_start_by) AS at FROM schedule
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL;

-- name: silent_owners
-- running schedules with no sign of life since the cutoff: the last ping, or the run's start when
-- no ping was recorded (as domain.schedules.last_sign_of_life reads it)
SELECT * FROM schedule
WHERE owner_tag IS NOT NULL
  AND (owner_last_ping_at < :cutoff OR (owner_last_ping_at IS NULL AND owner_started_at < :cutoff))
ORDER BY COALESCE(owner_last_ping_at, owner_started_at)
LIMIT :limit;

-- name: mark_steal
UPDATE schedule SET steal_start_at = :now WHERE name = :name AND owner_tag = :tag;

-- name: owned_by_node
SELECT * FROM schedule WHERE owner_tag IS NOT NULL AND owner_node = :node;

-- name: schedule_runs
SELECT * FROM schedule_run
WHERE schedule = :name AND id < :before_id
ORDER BY id DESC LIMIT :limit;

-- name: insert_declaration
-- a source's set of declarations, first seen now (kept as it was when seen before)
INSERT INTO schedule_declaration (source, fingerprint, first_seen_at, schedules)
VALUES (:source, :fingerprint, :now, :schedules)
ON CONFLICT (source, fingerprint) DO NOTHING;

-- name: force_declaration
-- a set applied with force: seen now, so that it is the newest
INSERT INTO schedule_declaration (source, fingerprint, first_seen_at, schedules)
VALUES (:source, :fingerprint, :now, :schedules)
ON CONFLICT (source, fingerprint) DO UPDATE SET first_seen_at = excluded.first_seen_at;

-- name: newest_declaration
SELECT fingerprint, first_seen_at FROM schedule_declaration WHERE source = :source
ORDER BY first_seen_at DESC, fingerprint DESC
LIMIT 1;

-- name: declared_schedules
-- the schedules a source declared, and those under the names it declares now
SELECT * FROM schedule
WHERE declared_by = :source OR name IN (SELECT value FROM json_each(:names));

-- name: backlogged_schedules
-- calendar schedules whose next fire time is older than the grace: a walk of schedule_backlog_idx
SELECT * FROM schedule INDEXED BY schedule_backlog_idx
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND kind = 'calendar' AND can_start_by <= :cutoff
ORDER BY can_start_by
LIMIT :limit;

-- name: insert_firings
-- rows: JSON array of [schedule, nominal_at, status, last_at, firings, claimed_by, lease_until, sender,
-- handled_at, sent_at]; a fire time already in the ledger is left as it is; returns the rows added
INSERT INTO schedule_firing (schedule, nominal_at, status, last_at, firings, claimed_by, lease_until, sender,
                             handled_at, sent_at)
SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7,
       value ->> 8, value ->> 9
FROM json_each(:rows) WHERE true
ON CONFLICT (schedule, nominal_at) DO NOTHING
RETURNING *;

-- name: schedule_firings
SELECT * FROM schedule_firing
WHERE schedule = :name AND nominal_at < :before
ORDER BY nominal_at DESC LIMIT :limit;

-- name: due_to_send
-- the schedules the beats send whose next fire time has come: a walk of schedule_fire_idx
SELECT * FROM schedule INDEXED BY schedule_fire_idx
WHERE enabled AND next_fire_at IS NOT NULL AND next_fire_at <= :now
ORDER BY next_fire_at
LIMIT :limit;

-- name: expired_claims
-- fire times claimed by a beat whose lease ended (it died, or paused): a walk of schedule_firing_lease_idx
SELECT f.schedule, f.nominal_at, s.task_type, s.arguments, s.options
FROM schedule_firing AS f INDEXED BY schedule_firing_lease_idx
JOIN schedule AS s ON s.name = f.schedule
WHERE f.status = 'claimed' AND f.lease_until <= :now
ORDER BY f.lease_until
LIMIT :limit;

-- name: take_claims
-- rows: JSON array of [schedule, nominal_at]; only claims still expired are taken over
UPDATE schedule_firing SET claimed_by = :tag, lease_until = :lease_until, sender = :sender, handled_at = :now
WHERE status = 'claimed' AND lease_until <= :now
  AND (schedule, nominal_at) IN (SELECT value ->> 0, value ->> 1 FROM json_each(:rows))
RETURNING schedule, nominal_at;

-- name: mark_sent
-- rows: JSON array of [schedule, nominal_at] this claim (tag) sent
UPDATE schedule_firing SET status = 'sent', sent_at = :now
WHERE claimed_by = :tag AND status = 'claimed'
  AND (schedule, nominal_at) IN (SELECT value ->> 0, value ->> 1 FROM json_each(:rows));

-- name: release_claims
-- rows: JSON array of [schedule, nominal_at] this claim (tag) will not send: another beat may at once
UPDATE schedule_firing SET lease_until = :now
WHERE claimed_by = :tag AND status = 'claimed'
  AND (schedule, nominal_at) IN (SELECT value ->> 0, value ->> 1 FROM json_each(:rows));

-- name: next_send_at
-- the next fire time to send, or the next claim whose lease ends (how long a beat may sleep)
SELECT min(at) AS at FROM (
    SELECT min(next_fire_at) AS at FROM schedule WHERE enabled AND next_fire_at IS NOT NULL
    UNION ALL
    SELECT min(lease_until) FROM schedule_firing WHERE status = 'claimed');

-- name: delete_schedule_firings
DELETE FROM schedule_firing WHERE schedule = :name;

-- Lookahead and the other pick orders (domain/lookahead.py): the snapshot a pick plans from, the few
-- columns it plans with (store/schedules/picks.py, PickFlow._candidate).

-- name: candidates_by_deadline
-- the K most urgent schedules that can start on this node (on any node: node null), when many can:
-- a walk of schedule_pick_idx
SELECT name, can_start_by, should_start_by, average_good_duration, expected_duration, scheduling_period, cron_schedule, tz,
       dont_run_on_nodes FROM schedule INDEXED BY schedule_pick_idx
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= :now
  AND (:node IS NULL OR :node NOT IN (SELECT value FROM json_each(dont_run_on_nodes)))
ORDER BY should_start_by
LIMIT :limit;

-- name: few_candidates_by_deadline
-- the same when fewer than the window can start: all of them through schedule_wake_idx, the K most
-- urgent kept (as pick_few_schedules)
SELECT name, can_start_by, should_start_by, average_good_duration, expected_duration, scheduling_period, cron_schedule, tz,
       dont_run_on_nodes FROM schedule
WHERE name IN (SELECT name FROM schedule INDEXED BY schedule_wake_idx
               WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= :now
               ORDER BY can_start_by
               LIMIT :window)
  AND enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= :now
  AND (:node IS NULL OR :node NOT IN (SELECT value FROM json_each(dont_run_on_nodes)))
ORDER BY should_start_by
LIMIT :limit;

-- name: candidates_by_due
-- the K first due that can start on this node, or on any (all of them, up to the window, when few can: sorted
-- by the rule's order afterwards): a walk of schedule_wake_idx
SELECT name, can_start_by, should_start_by, average_good_duration, expected_duration, scheduling_period, cron_schedule, tz,
       dont_run_on_nodes FROM schedule INDEXED BY schedule_wake_idx
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by <= :now
  AND (:node IS NULL OR :node NOT IN (SELECT value FROM json_each(dont_run_on_nodes)))
ORDER BY can_start_by
LIMIT :limit;

-- name: upcoming_schedules
-- the K next due within the horizon, whichever node may run them: a walk of schedule_wake_idx
SELECT name, can_start_by, should_start_by, average_good_duration, expected_duration, scheduling_period, cron_schedule, tz,
       dont_run_on_nodes FROM schedule INDEXED BY schedule_wake_idx
WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND can_start_by > :now
  AND can_start_by <= :until
ORDER BY can_start_by
LIMIT :limit;

-- name: heartbeat_scheduler
INSERT INTO scheduler_node (node, instance, slots, run_ends, seen_at)
VALUES (:node, :instance, :slots, :run_ends, :now)
ON CONFLICT (node, instance) DO UPDATE SET slots = excluded.slots, run_ends = excluded.run_ends,
    seen_at = excluded.seen_at;

-- name: forget_schedulers
-- schedulers silent for long (many node timeouts): gone
DELETE FROM scheduler_node WHERE seen_at < :cutoff;

-- name: list_schedulers
SELECT node, instance, slots, run_ends, seen_at FROM scheduler_node WHERE seen_at >= :cutoff ORDER BY node, instance;

-- name: list_holds
SELECT * FROM schedule_hold WHERE expires_at > :now ORDER BY due_at, waits_for;

-- name: holds_for
SELECT * FROM schedule_hold WHERE waits_for = :name AND expires_at > :now ORDER BY due_at;

-- name: drop_holds
-- a scheduler's holds, replaced at each of its picks that held or holds
DELETE FROM schedule_hold WHERE node = :node AND instance = :instance;

-- name: purge_holds
-- holds expired long ago (at a heartbeat: the reads skip any expired one)
DELETE FROM schedule_hold WHERE expires_at <= :cutoff;

-- name: insert_holds
-- rows: JSON array of [name, due_at, expires_at]
INSERT INTO schedule_hold (node, instance, waits_for, due_at, expires_at, held_at)
SELECT :node, :instance, k.value ->> 0, k.value ->> 1, k.value ->> 2, :now FROM json_each(:rows) AS k WHERE true
ON CONFLICT DO NOTHING;

-- name: lock_chosen
-- the schedules a pick by rule chose, still free (the write transaction holds the database: no row locks):
-- each looked up by its name, never a scan of the free ones
SELECT name FROM schedule WHERE name IN (SELECT value FROM json_each(:names)) AND owner_tag IS NULL
ORDER BY name;
