-- 0002: the value sealed by the first replica's keyring, which every replica opens at
-- start-up to know that its keyring is the one the stored secrets are sealed with
-- (store.KeyringCheck). One row; Reseal rewrites it with the other sealed values.
CREATE TABLE keyring_check (
    id     integer PRIMARY KEY CHECK (id = 1),
    sealed bytea NOT NULL
);
