-- 0003: skills (OpenHands' microagents).
--
-- user_skills are the skills users keep in agentd, by name; every conversation they start is
-- given them. triggers is a JSON array of words; none makes the skill always on.
CREATE TABLE user_skills (
    user_id     TEXT NOT NULL,
    name        TEXT NOT NULL,
    triggers    TEXT NOT NULL,
    description TEXT NOT NULL,
    content     TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (user_id, name)
) STRICT;
CREATE INDEX user_skills_created ON user_skills (user_id, created_at, name);

-- conversation_skills are the skills a conversation was started with (the user's and its
-- workspace's, read once when it starts), so that the agent is given the same ones after a
-- restart whatever the files say by then. They go with their conversation.
CREATE TABLE conversation_skills (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    name            TEXT NOT NULL,
    type            TEXT NOT NULL,
    triggers        TEXT NOT NULL, -- JSON array
    description     TEXT NOT NULL,
    content         TEXT NOT NULL,
    source          TEXT NOT NULL,
    PRIMARY KEY (conversation_id, position)
) STRICT;
