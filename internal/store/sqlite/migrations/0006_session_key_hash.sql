-- 0005: a sandbox is found by its session key alone, as clients of the agent-server API at
-- its own base name no sandbox in their paths.
--
-- session_key_hash is the SHA-256 of the plain session key. Records made before this column
-- get it when the server next starts (the key is sealed, so SQL cannot compute it).
ALTER TABLE sandboxes ADD COLUMN session_key_hash BLOB;
CREATE UNIQUE INDEX sandboxes_session_key_hash ON sandboxes (session_key_hash) WHERE session_key_hash IS NOT NULL;
