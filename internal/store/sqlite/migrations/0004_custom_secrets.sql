-- 0003: users' custom secrets, and the secrets a conversation's agent may use.
--
-- A secret is named like an environment variable, unique per user; its value is sealed.
CREATE TABLE custom_secrets (
    user_id      TEXT NOT NULL,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL,
    value_sealed BLOB NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (user_id, name)
) STRICT;

-- secret_names lists (JSON array) the secrets the conversation's agent may use: its owner's
-- stored secrets by name, and those its start request gave inline, whose values are
-- secrets_sealed (a sealed JSON object of name to value).
ALTER TABLE conversations ADD COLUMN secret_names TEXT NOT NULL DEFAULT '[]';
ALTER TABLE conversations ADD COLUMN secrets_sealed BLOB;
