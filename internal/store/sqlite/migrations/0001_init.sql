-- 0001: the first schema of agentd.
--
-- Times are INTEGER unix nanoseconds UTC (the zero time.Time is stored as the smallest int64),
-- so ordering and keyset cursors compare exactly. JSON values are TEXT; sealed secrets are BLOB.

CREATE TABLE users (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    is_admin   INTEGER NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX users_created ON users (created_at, id);

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    prefix     TEXT NOT NULL,
    hash       BLOB NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER
) STRICT;
CREATE INDEX api_keys_user ON api_keys (user_id, created_at, id);

CREATE TABLE settings (
    user_id     TEXT PRIMARY KEY,
    values_json TEXT,
    -- JSON object: secret name -> base64 of the sealed value.
    secrets     TEXT NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE provider_tokens (
    user_id          TEXT NOT NULL,
    provider         TEXT NOT NULL,
    token_sealed     BLOB,
    host             TEXT NOT NULL,
    external_user_id TEXT NOT NULL,
    updated_at       INTEGER NOT NULL,
    PRIMARY KEY (user_id, provider)
) STRICT;

CREATE TABLE sandbox_specs (
    id          TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    command     TEXT NOT NULL, -- JSON array
    initial_env TEXT NOT NULL, -- JSON object
    working_dir TEXT NOT NULL,
    image       TEXT NOT NULL,
    rootfs      TEXT NOT NULL,
    network     TEXT NOT NULL,
    limits      TEXT NOT NULL, -- JSON object
    created_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE sandboxes (
    id                 TEXT PRIMARY KEY,
    owner_id           TEXT NOT NULL,
    spec_id            TEXT NOT NULL,
    backend            TEXT NOT NULL,
    status             TEXT NOT NULL,
    detail             TEXT NOT NULL,
    session_key_sealed BLOB,
    instance           TEXT NOT NULL, -- JSON sandbox.Instance
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
) STRICT;
CREATE INDEX sandboxes_owner_created ON sandboxes (owner_id, created_at, id);
CREATE INDEX sandboxes_created ON sandboxes (created_at, id);

CREATE TABLE conversations (
    id                  TEXT PRIMARY KEY,
    owner_id            TEXT NOT NULL,
    sandbox_id          TEXT NOT NULL,
    version             TEXT NOT NULL,
    title               TEXT NOT NULL,
    -- title_fold is the lower-cased title that TitleContains searches.
    title_fold          TEXT NOT NULL,
    selected_repository TEXT,
    selected_branch     TEXT,
    git_provider        TEXT,
    trigger_name        TEXT,
    pr_numbers          TEXT NOT NULL, -- JSON array
    llm_model           TEXT,
    metrics             TEXT,          -- JSON object
    parent_id           TEXT,
    request_sealed      BLOB,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
) STRICT;
CREATE INDEX conversations_owner_created ON conversations (owner_id, created_at, id);

CREATE TABLE start_tasks (
    id               TEXT PRIMARY KEY,
    owner_id         TEXT NOT NULL,
    conversation_id  TEXT NOT NULL,
    status           TEXT NOT NULL,
    detail           TEXT NOT NULL,
    sandbox_id       TEXT NOT NULL,
    agent_server_url TEXT NOT NULL,
    request          TEXT, -- JSON object
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX start_tasks_owner_created ON start_tasks (owner_id, created_at, id);
CREATE INDEX start_tasks_owner_updated ON start_tasks (owner_id, updated_at, id);
CREATE INDEX start_tasks_conversation ON start_tasks (conversation_id, created_at, id);
CREATE INDEX start_tasks_pending ON start_tasks (created_at, id) WHERE status NOT IN ('READY', 'ERROR');

CREATE TABLE events (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    kind            TEXT NOT NULL,
    source          TEXT NOT NULL,
    ts              INTEGER NOT NULL,
    body            TEXT
) STRICT;
CREATE INDEX events_conversation_seq ON events (conversation_id, seq);
