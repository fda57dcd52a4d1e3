-- 0001: the first schema of agentd on PostgreSQL: the SQLite store's schema as of its
-- migration 0013, less what only SQLite needs (the rev counters and triggers of its listing
-- cache).
--
-- Conventions:
--   - Ids, names and other text that listings sort or compare with < and > are COLLATE "C",
--     so that they order byte by byte, as SQLite's BINARY collation does, whatever the
--     database's default collation (an ICU or glibc locale would put "api_token" before
--     "API_TOKEN").
--   - JSON documents are text, not jsonb: clients read back exactly the bytes stored (jsonb
--     would reorder keys and drop whitespace), so that the API answers the same bytes on
--     SQLite and on PostgreSQL.
--   - Times are timestamptz: microseconds, read back in UTC. The zero time.Time is stored as
--     it is (year 1), which sorts it first, as SQLite's smallest integer does.
--   - Sealed secrets are bytea.

CREATE TABLE users (
    id         text COLLATE "C" PRIMARY KEY,
    name       text NOT NULL UNIQUE,
    is_admin   boolean NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX users_created ON users (created_at, id);

CREATE TABLE api_keys (
    id         text COLLATE "C" PRIMARY KEY,
    user_id    text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       text NOT NULL,
    prefix     text NOT NULL,
    hash       bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL,
    expires_at timestamptz
);
CREATE INDEX api_keys_user ON api_keys (user_id, created_at, id);

-- The web app's sessions: hash is the SHA-256 of the cookie's token. A session acts for the
-- user of the key it was opened with and goes when that key is deleted.
CREATE TABLE web_sessions (
    hash       bytea PRIMARY KEY,
    key_id     text COLLATE "C" NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    user_id    text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX web_sessions_key ON web_sessions (key_id);
CREATE INDEX web_sessions_expires ON web_sessions (expires_at);

CREATE TABLE settings (
    user_id     text COLLATE "C" PRIMARY KEY,
    values_json text,
    -- JSON object: secret name -> base64 of the sealed value.
    secrets     text NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE provider_tokens (
    user_id          text COLLATE "C" NOT NULL,
    provider         text COLLATE "C" NOT NULL,
    token_sealed     bytea,
    host             text NOT NULL,
    external_user_id text NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (user_id, provider)
);

-- Users' custom secrets, named like environment variables (case matters), unique per user.
CREATE TABLE custom_secrets (
    user_id      text COLLATE "C" NOT NULL,
    name         text COLLATE "C" NOT NULL,
    description  text NOT NULL,
    value_sealed bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (user_id, name)
);

CREATE TABLE sandbox_specs (
    id          text COLLATE "C" PRIMARY KEY,
    description text NOT NULL,
    command     text NOT NULL, -- JSON array
    initial_env text NOT NULL, -- JSON object
    working_dir text NOT NULL,
    image       text NOT NULL,
    rootfs      text NOT NULL,
    network     text NOT NULL,
    limits      text NOT NULL, -- JSON object
    created_at  timestamptz NOT NULL
);

-- session_key_hash is the SHA-256 of the plain session key, by which a sandbox is found when
-- a request names only its key; NULL in records made without one (a UNIQUE column may hold
-- many NULLs).
CREATE TABLE sandboxes (
    id                 text COLLATE "C" PRIMARY KEY,
    owner_id           text COLLATE "C" NOT NULL,
    spec_id            text NOT NULL,
    backend            text NOT NULL,
    status             text NOT NULL,
    detail             text NOT NULL,
    session_key_sealed bytea,
    session_key_hash   bytea UNIQUE,
    instance           text NOT NULL, -- JSON sandbox.Instance
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);
CREATE INDEX sandboxes_owner_created ON sandboxes (owner_id, created_at, id);
CREATE INDEX sandboxes_created ON sandboxes (created_at, id);
-- The sandbox watcher reads only the sandboxes whose processes should exist.
CREATE INDEX sandboxes_live ON sandboxes (status) WHERE status IN ('STARTING', 'RUNNING', 'PAUSED');

-- title_fold is the title in lower case (Go's strings.ToLower, beyond ASCII), which
-- TitleContains searches. execution_status copies the last execution_status update of the
-- conversation's event log ('' until its start task is READY), confirmation_policy the last
-- confirmation_policy update (a JSON object; '' when none was ever set). public is NULL until
-- a client sets it; title_by_user is set once the user named the conversation.
CREATE TABLE conversations (
    id                  text COLLATE "C" PRIMARY KEY,
    owner_id            text COLLATE "C" NOT NULL,
    sandbox_id          text COLLATE "C" NOT NULL,
    version             text NOT NULL,
    title               text NOT NULL,
    title_fold          text NOT NULL,
    selected_repository text,
    selected_branch     text,
    git_provider        text,
    trigger_name        text,
    pr_numbers          text NOT NULL,          -- JSON array
    llm_model           text,
    metrics             text,                   -- JSON object
    parent_id           text COLLATE "C",
    request_sealed      bytea,
    secret_names        text NOT NULL,          -- JSON array
    secrets_sealed      bytea,
    public              boolean,
    tags                text NOT NULL,          -- JSON object
    title_by_user       boolean NOT NULL,
    execution_status    text NOT NULL,
    confirmation_policy text NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL
);
CREATE INDEX conversations_owner_created ON conversations (owner_id, created_at, id);
CREATE INDEX conversations_owner_sandbox ON conversations (owner_id, sandbox_id, created_at, id);
CREATE INDEX conversations_owner_repository ON conversations (owner_id, selected_repository, created_at, id)
    WHERE selected_repository IS NOT NULL;
CREATE INDEX conversations_owner_trigger ON conversations (owner_id, trigger_name, created_at, id)
    WHERE trigger_name IS NOT NULL;
CREATE INDEX conversations_parent ON conversations (parent_id, created_at, id) WHERE parent_id IS NOT NULL;
CREATE INDEX conversations_running ON conversations (created_at, id) WHERE execution_status = 'running';

CREATE TABLE start_tasks (
    id               text COLLATE "C" PRIMARY KEY,
    owner_id         text COLLATE "C" NOT NULL,
    conversation_id  text COLLATE "C" NOT NULL,
    status           text NOT NULL,
    detail           text NOT NULL,
    sandbox_id       text NOT NULL,
    agent_server_url text NOT NULL,
    request          text, -- JSON object
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX start_tasks_owner_created ON start_tasks (owner_id, created_at, id);
CREATE INDEX start_tasks_owner_updated ON start_tasks (owner_id, updated_at, id);
CREATE INDEX start_tasks_conversation ON start_tasks (conversation_id, created_at, id);
CREATE INDEX start_tasks_pending ON start_tasks (created_at, id) WHERE status NOT IN ('READY', 'ERROR');

-- The event log. seq comes from one sequence for all events, so it increases across all of
-- them; an append takes its numbers while it holds its conversation's row lock, so that the
-- events of one conversation commit, and become visible, in seq order (see events.go).
-- owner_id is the owner of the event's conversation, written with the event, so that a user's
-- events page by (owner_id, seq). body_fold is event.BodyText of a MessageEvent in lower case,
-- which Filter.Body searches; NULL for other kinds. llm_text is what the model was shown for an
-- observation (it is not part of the event JSON clients read): bytea, since it is a tool's
-- output as it came, which may hold NUL characters and bytes that are not UTF-8, which text
-- refuses.
CREATE TABLE events (
    seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              text COLLATE "C" NOT NULL UNIQUE,
    conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id),
    owner_id        text COLLATE "C" NOT NULL,
    kind            text NOT NULL,
    source          text NOT NULL,
    ts              timestamptz NOT NULL,
    body            text,
    llm_text        bytea,
    body_fold       text
);
CREATE INDEX events_conversation_seq ON events (conversation_id, seq);
CREATE INDEX events_owner_seq ON events (owner_id, seq);

-- A pending message waits, in seq order, for its conversation's start task to be READY; it is
-- deleted in the transaction that appends it to the event log. content is the message's text
-- and images as a JSON object.
CREATE TABLE pending_messages (
    seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              text COLLATE "C" NOT NULL UNIQUE,
    conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id),
    role            text NOT NULL,
    content         text NOT NULL,
    created_at      timestamptz NOT NULL
);
CREATE INDEX pending_messages_conversation ON pending_messages (conversation_id, seq);

-- The skills users keep in agentd, by name; triggers is a JSON array of words, none making
-- the skill always on.
CREATE TABLE user_skills (
    user_id     text COLLATE "C" NOT NULL,
    name        text COLLATE "C" NOT NULL,
    triggers    text NOT NULL,
    description text NOT NULL,
    content     text NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (user_id, name)
);
CREATE INDEX user_skills_created ON user_skills (user_id, created_at, name);

-- The skills a conversation was started with, in order; they go with their conversation.
-- mcp_servers is a JSON array of skill.MCPServer.
CREATE TABLE conversation_skills (
    conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position        integer NOT NULL,
    name            text NOT NULL,
    type            text NOT NULL,
    triggers        text NOT NULL, -- JSON array
    description     text NOT NULL,
    content         text NOT NULL,
    source          text NOT NULL,
    mcp_servers     text NOT NULL,
    PRIMARY KEY (conversation_id, position)
);

-- Webhooks: kinds is a JSON array of event kinds ("*" for all); conversation_id, when set,
-- limits the webhook to that conversation. The secret that signs deliveries is sealed.
CREATE TABLE webhooks (
    id              text COLLATE "C" PRIMARY KEY,
    owner_id        text COLLATE "C" NOT NULL,
    url             text NOT NULL,
    kinds           text NOT NULL,
    conversation_id text,
    description     text NOT NULL,
    secret_sealed   bytea NOT NULL,
    created_at      timestamptz NOT NULL
);
CREATE INDEX webhooks_owner ON webhooks (owner_id, created_at, id);

-- A delivery is stored before it is sent and updated after every attempt. A pending one is
-- due at next_attempt_at (moved on while an attempt is under way, so that a claim lapses if
-- the process dies); response_code is the last answer's status, NULL when there was none.
CREATE TABLE webhook_deliveries (
    id              text COLLATE "C" PRIMARY KEY,
    webhook_id      text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    owner_id        text COLLATE "C" NOT NULL,
    kind            text NOT NULL,
    payload         text NOT NULL,
    status          text NOT NULL,
    attempts        integer NOT NULL,
    response_code   integer,
    error           text NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    next_attempt_at timestamptz,
    retry_until     timestamptz NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at, id);
