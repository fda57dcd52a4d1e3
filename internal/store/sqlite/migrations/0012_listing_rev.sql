-- 0012: rev counts the updates of a start task or a sandbox: a trigger increments it on
-- every UPDATE of the row, whichever statement makes it (status changes, key rotation), so
-- that a listing can tell a row it read before from one that changed since by reading rev
-- alone (see the listing cache). The owner's indexes carry what a listing reads of each row
-- (its id, creation time and rev), so that the listing reads them alone.
ALTER TABLE start_tasks ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER start_tasks_rev AFTER UPDATE ON start_tasks FOR EACH ROW WHEN NEW.rev = OLD.rev
BEGIN
    UPDATE start_tasks SET rev = OLD.rev + 1 WHERE rowid = NEW.rowid;
END;
DROP INDEX start_tasks_owner_created;
CREATE INDEX start_tasks_owner_created ON start_tasks (owner_id, created_at, id, rev);
DROP INDEX start_tasks_owner_updated;
CREATE INDEX start_tasks_owner_updated ON start_tasks (owner_id, updated_at, id, created_at, rev);

ALTER TABLE sandboxes ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER sandboxes_rev AFTER UPDATE ON sandboxes FOR EACH ROW WHEN NEW.rev = OLD.rev
BEGIN
    UPDATE sandboxes SET rev = OLD.rev + 1 WHERE rowid = NEW.rowid;
END;
DROP INDEX sandboxes_owner_created;
CREATE INDEX sandboxes_owner_created ON sandboxes (owner_id, created_at, id, rev);
DROP INDEX sandboxes_created;
CREATE INDEX sandboxes_created ON sandboxes (created_at, id, rev);
