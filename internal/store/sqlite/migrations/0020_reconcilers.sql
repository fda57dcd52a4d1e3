-- 0020: which replica reconciles and watches the sandboxes of a backend every replica reaches
-- (sandbox.Store.ClaimReconciler): one at a time, by lease.
CREATE TABLE sandbox_reconcilers (
    backend    TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
