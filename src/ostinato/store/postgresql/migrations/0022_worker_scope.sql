-- 0022: Tokens of the worker scope (domain.access): what the machines do (schedulers, runners, beats, the
-- orchestrator, listers, the journal client), and no operator action. A CHECK changed in place: the
-- tokens stay as they are (a table of a few rows, locked for an instant).

ALTER TABLE api_token DROP CONSTRAINT api_token_scope_check;
ALTER TABLE api_token ADD CONSTRAINT api_token_scope_check CHECK (scope IN ('read', 'worker', 'admin'));
