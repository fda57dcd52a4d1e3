-- 0011: every listing's filters and sorts reach their rows through an index, so that a page
-- costs what the page holds, not what the table holds (see the query plans' test).
--
-- owner_id on events is the owner of the event's conversation, written with the event: the
-- events of all of a user's conversations page by (owner_id, seq) instead of joining every
-- conversation's events and sorting them.
ALTER TABLE events ADD COLUMN owner_id TEXT;
UPDATE events SET owner_id = (SELECT c.owner_id FROM conversations c WHERE c.id = events.conversation_id);
CREATE INDEX events_owner_seq ON events (owner_id, seq);

-- The conversation listing's filters, each in the listing's order.
CREATE INDEX conversations_owner_sandbox ON conversations (owner_id, sandbox_id, created_at, id);
CREATE INDEX conversations_owner_repository ON conversations (owner_id, selected_repository, created_at, id)
    WHERE selected_repository IS NOT NULL;
CREATE INDEX conversations_owner_trigger ON conversations (owner_id, trigger_name, created_at, id)
    WHERE trigger_name IS NOT NULL;
-- The sub-conversations of each listed conversation.
CREATE INDEX conversations_parent ON conversations (parent_id, created_at, id) WHERE parent_id IS NOT NULL;

-- The sandbox watcher reads only the sandboxes whose processes should exist.
CREATE INDEX sandboxes_live ON sandboxes (status) WHERE status IN ('STARTING', 'RUNNING', 'PAUSED');
