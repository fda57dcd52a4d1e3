-- 0012: rev counts the changes of what a listing shows of a row, as in the SQLite store (its
-- migrations 0012 and 0013), so that a listing can tell a row it read before from one that
-- changed since by reading rev alone, whichever replica made the change (see the listing
-- cache, listingcache.go). Every UPDATE of a start task, a sandbox or a conversation increments
-- its rev, whatever statement makes it (key rotation included); a statement that sets rev
-- itself is left as it is.
ALTER TABLE start_tasks ADD COLUMN rev bigint NOT NULL DEFAULT 0;
ALTER TABLE sandboxes ADD COLUMN rev bigint NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN rev bigint NOT NULL DEFAULT 0;

CREATE FUNCTION agentd_bump_rev() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.rev = OLD.rev THEN
        NEW.rev := OLD.rev + 1;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER start_tasks_rev BEFORE UPDATE ON start_tasks FOR EACH ROW EXECUTE FUNCTION agentd_bump_rev();
CREATE TRIGGER sandboxes_rev BEFORE UPDATE ON sandboxes FOR EACH ROW EXECUTE FUNCTION agentd_bump_rev();
CREATE TRIGGER conversations_rev BEFORE UPDATE ON conversations FOR EACH ROW EXECUTE FUNCTION agentd_bump_rev();

-- A conversation shows its sandbox as the owner has it: the sandbox's status and session key,
-- MISSING once it is deleted. Its conversations are locked in the order of their ids, as
-- appends to several conversations lock them, so that the two cannot deadlock.
CREATE FUNCTION agentd_conversations_rev_sandbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sb sandboxes;
BEGIN
    IF TG_OP = 'DELETE' THEN
        sb := OLD;
    ELSE
        sb := NEW;
    END IF;
    PERFORM 1 FROM conversations WHERE owner_id = sb.owner_id AND sandbox_id = sb.id ORDER BY id FOR NO KEY UPDATE;
    UPDATE conversations SET rev = rev + 1 WHERE owner_id = sb.owner_id AND sandbox_id = sb.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER conversations_rev_sandbox AFTER INSERT OR DELETE ON sandboxes
    FOR EACH ROW EXECUTE FUNCTION agentd_conversations_rev_sandbox();
CREATE TRIGGER conversations_rev_sandbox_update AFTER UPDATE OF status, session_key_sealed ON sandboxes
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.session_key_sealed IS DISTINCT FROM NEW.session_key_sealed)
    EXECUTE FUNCTION agentd_conversations_rev_sandbox();

-- A conversation shows the status and detail of its latest start task. A writer of a start
-- task of an existing conversation locks the conversation first (UpdateStartTask), as
-- AddPendingMessage does before it reads the task, so that the two cannot deadlock.
CREATE FUNCTION agentd_conversations_rev_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE conversations SET rev = rev + 1 WHERE id = NEW.conversation_id;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE conversations SET rev = rev + 1 WHERE id = OLD.conversation_id;
    ELSE
        UPDATE conversations SET rev = rev + 1 WHERE id IN (OLD.conversation_id, NEW.conversation_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER conversations_rev_task AFTER INSERT OR DELETE ON start_tasks
    FOR EACH ROW EXECUTE FUNCTION agentd_conversations_rev_task();
CREATE TRIGGER conversations_rev_task_update AFTER UPDATE OF owner_id, conversation_id, status, detail, created_at ON start_tasks
    FOR EACH ROW WHEN (OLD.owner_id IS DISTINCT FROM NEW.owner_id OR OLD.conversation_id IS DISTINCT FROM NEW.conversation_id
        OR OLD.status IS DISTINCT FROM NEW.status OR OLD.detail IS DISTINCT FROM NEW.detail OR OLD.created_at IS DISTINCT FROM NEW.created_at)
    EXECUTE FUNCTION agentd_conversations_rev_task();

-- The listings read each row's id, creation time and rev (and a conversation's parent, as
-- sub-conversations are left out by default) from the owner's indexes alone.
DROP INDEX conversations_owner_created;
CREATE INDEX conversations_owner_created ON conversations (owner_id, created_at, id) INCLUDE (rev, parent_id);
DROP INDEX start_tasks_owner_created;
CREATE INDEX start_tasks_owner_created ON start_tasks (owner_id, created_at, id) INCLUDE (rev);
DROP INDEX start_tasks_owner_updated;
CREATE INDEX start_tasks_owner_updated ON start_tasks (owner_id, updated_at, id) INCLUDE (created_at, rev);
DROP INDEX sandboxes_owner_created;
CREATE INDEX sandboxes_owner_created ON sandboxes (owner_id, created_at, id) INCLUDE (rev);
DROP INDEX sandboxes_created;
CREATE INDEX sandboxes_created ON sandboxes (created_at, id) INCLUDE (rev);
