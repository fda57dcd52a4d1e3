-- 0008: webhooks, users' endpoints that agentd tells about their conversations and sandboxes,
-- and the deliveries to them.
--
-- kinds is a JSON array of event kinds ("*" for all); conversation_id, when set, limits the
-- webhook to that conversation. The secret that signs deliveries is sealed.
CREATE TABLE webhooks (
    id              TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL,
    url             TEXT NOT NULL,
    kinds           TEXT NOT NULL,
    conversation_id TEXT,
    description     TEXT NOT NULL,
    secret_sealed   BLOB NOT NULL,
    created_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX webhooks_owner ON webhooks (owner_id, created_at);

-- A delivery is stored before it is sent and updated after every attempt. A pending one is
-- due at next_attempt_at (moved on while an attempt is under way, so that a claim lapses if
-- the process dies); response_code is the last answer's status, NULL when there was none.
CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    owner_id        TEXT NOT NULL,
    kind            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    response_code   INTEGER,
    error           TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    next_attempt_at INTEGER,
    retry_until     INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at, id);
