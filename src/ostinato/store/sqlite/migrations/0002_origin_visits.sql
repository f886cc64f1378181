-- 0002: listers, listed origins and visit stats (see docs/design/origins.md).

CREATE TABLE lister (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    instance_name TEXT NOT NULL,
    current_state TEXT NOT NULL DEFAULT '{}',
    last_listing_finished_at TEXT,
    -- optimistic concurrency token: an update from a stale copy is refused
    updated TEXT NOT NULL,
    UNIQUE (name, instance_name)
) STRICT;

CREATE TABLE listed_origin (
    lister_id INTEGER NOT NULL REFERENCES lister (id),
    url TEXT NOT NULL,
    visit_type TEXT NOT NULL,
    extra_loader_arguments TEXT NOT NULL DEFAULT '{}',
    enabled INTEGER NOT NULL DEFAULT 1,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    last_update TEXT,
    is_fork INTEGER,
    forked_from_url TEXT,
    PRIMARY KEY (lister_id, url, visit_type)
) STRICT;
-- the feedback loop disables an origin in every lister that lists it
CREATE INDEX listed_origin_url_idx ON listed_origin (url, visit_type);

CREATE TABLE origin_visit_stats (
    url TEXT NOT NULL,
    visit_type TEXT NOT NULL,
    last_visit TEXT,
    last_visit_status TEXT CHECK (last_visit_status IN ('successful', 'failed', 'not_found')),
    last_successful TEXT,
    last_snapshot BLOB,
    last_eventful TEXT,
    last_uneventful TEXT,
    failure_count INTEGER NOT NULL DEFAULT 0,
    last_scheduled TEXT,
    next_visit_target TEXT,
    -- date of the newest final status applied: older or equal ones change nothing
    last_status_date TEXT,
    PRIMARY KEY (url, visit_type)
) STRICT;
