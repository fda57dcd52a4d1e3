-- 0013: the node a conversation's sandbox lives on while that node runs no replica to run
-- the conversation (the waiting_for_node state updates of its log), '' otherwise.
ALTER TABLE conversations ADD COLUMN waiting_for_node text NOT NULL DEFAULT '';
