-- 0018: the replicas that run on the store, each with its node, alive while it renews
-- expires_at (conversation.Store.Heartbeat): a conversation whose sandbox is on a node without
-- a live replica waits for it.
CREATE TABLE replicas (
    id         TEXT PRIMARY KEY,
    node       TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
