-- 0008: which replica reconciles and watches the sandboxes of a backend every replica reaches
-- (sandbox.Store.ClaimReconciler): one at a time, by lease, by the database's clock.
CREATE TABLE sandbox_reconcilers (
    backend    text COLLATE "C" PRIMARY KEY,
    holder     text COLLATE "C" NOT NULL,
    expires_at timestamptz NOT NULL
);
