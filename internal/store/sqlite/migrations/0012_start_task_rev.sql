-- 0012: rev counts the updates of a start task (UpdateStartTask increments it), so that a
-- listing can tell a task it read before from one that changed since by reading rev alone.
-- The owner's indexes carry what a listing reads of each task (its id, creation time and
-- rev), so that the listing reads them alone.
ALTER TABLE start_tasks ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
DROP INDEX start_tasks_owner_created;
CREATE INDEX start_tasks_owner_created ON start_tasks (owner_id, created_at, id, rev);
DROP INDEX start_tasks_owner_updated;
CREATE INDEX start_tasks_owner_updated ON start_tasks (owner_id, updated_at, id, created_at, rev);
