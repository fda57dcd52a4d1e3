-- 0013: rev counts the changes of what a conversation's listing shows: the conversation's own
-- row, the status and session key of its sandbox, and its latest start task (see viewSelect).
-- Triggers increment it on every change of any of them, so that a listing can tell a
-- conversation it read before from one that changed since by reading rev alone (see the
-- listing cache). A statement that sets rev itself (an agent step's update) skips the
-- conversation's own trigger, and with it a second write of the row.
ALTER TABLE conversations ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER conversations_rev AFTER UPDATE ON conversations FOR EACH ROW WHEN NEW.rev = OLD.rev
BEGIN
    UPDATE conversations SET rev = OLD.rev + 1 WHERE rowid = NEW.rowid;
END;

-- A conversation shows its sandbox as the owner has it: the sandbox's status and session key,
-- MISSING once it is deleted.
CREATE TRIGGER conversations_rev_sandbox_insert AFTER INSERT ON sandboxes FOR EACH ROW
BEGIN
    UPDATE conversations SET rev = rev + 1 WHERE owner_id = NEW.owner_id AND sandbox_id = NEW.id;
END;
CREATE TRIGGER conversations_rev_sandbox_update AFTER UPDATE OF status, session_key_sealed ON sandboxes FOR EACH ROW
BEGIN
    UPDATE conversations SET rev = rev + 1 WHERE owner_id = NEW.owner_id AND sandbox_id = NEW.id;
END;
CREATE TRIGGER conversations_rev_sandbox_delete AFTER DELETE ON sandboxes FOR EACH ROW
BEGIN
    UPDATE conversations SET rev = rev + 1 WHERE owner_id = OLD.owner_id AND sandbox_id = OLD.id;
END;

-- A conversation shows the status and detail of its latest start task.
CREATE TRIGGER conversations_rev_task_insert AFTER INSERT ON start_tasks FOR EACH ROW
BEGIN
    UPDATE conversations SET rev = rev + 1 WHERE id = NEW.conversation_id;
END;
CREATE TRIGGER conversations_rev_task_update
AFTER UPDATE OF owner_id, conversation_id, status, detail, created_at ON start_tasks FOR EACH ROW
BEGIN
    UPDATE conversations SET rev = rev + 1 WHERE id IN (OLD.conversation_id, NEW.conversation_id);
END;
CREATE TRIGGER conversations_rev_task_delete AFTER DELETE ON start_tasks FOR EACH ROW
BEGIN
    UPDATE conversations SET rev = rev + 1 WHERE id = OLD.conversation_id;
END;

-- The listing reads each conversation's id, creation time and rev, and whether it has a
-- parent (sub-conversations are left out by default), from the owner's index alone.
DROP INDEX conversations_owner_created;
CREATE INDEX conversations_owner_created ON conversations (owner_id, created_at, id, rev, parent_id);
