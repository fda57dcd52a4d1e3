-- 0009: the web app's sessions. A browser signs in with an API key once and then holds a
-- random token in a cookie; hash is its SHA-256 (the token is never stored). A session acts
-- for the user of the key it was opened with and goes when that key is deleted.
CREATE TABLE web_sessions (
    hash       BLOB PRIMARY KEY,
    key_id     TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX web_sessions_key ON web_sessions (key_id);
CREATE INDEX web_sessions_expires ON web_sessions (expires_at);
