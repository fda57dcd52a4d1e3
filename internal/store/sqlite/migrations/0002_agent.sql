-- 0002: the agent loop.
--
-- execution_status is the agent's state (idle, running, paused, finished, error, stuck; empty
-- until the conversation's start task is READY), a copy of the last execution_status state
-- update in the conversation's event log, kept on the row so that listings show it and a
-- restarted server finds the conversations whose agent was running.
ALTER TABLE conversations ADD COLUMN execution_status TEXT NOT NULL DEFAULT '';
CREATE INDEX conversations_running ON conversations (execution_status) WHERE execution_status = 'running';

-- llm_text is the text the model was shown for an observation event; it is not part of the
-- event JSON clients read.
ALTER TABLE events ADD COLUMN llm_text TEXT;
