-- 0006: the replicas that run on the database, each with its node, alive while it renews
-- expires_at (conversation.Store.Heartbeat): a conversation whose sandbox is on a node without
-- a live replica waits for it.
CREATE TABLE replicas (
    id         text COLLATE "C" PRIMARY KEY,
    node       text COLLATE "C" NOT NULL,
    started_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
