-- 0014: the value sealed by the first server's keyring, which a server opens at start-up to
-- know that its keyring is the one the stored secrets are sealed with (store.KeyringCheck).
-- One row; Reseal rewrites it with the other sealed values.
CREATE TABLE keyring_check (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    sealed BLOB NOT NULL
);
