-- 0019: the keys each replica's keyring holds, and the one it seals with, so that a key is
-- made active, and old ones dropped, only once every live replica can open what it seals
-- (agentd keyring activate, reseal, prune). key_ids is comma-separated.
ALTER TABLE replicas ADD COLUMN key_ids TEXT NOT NULL DEFAULT '';
ALTER TABLE replicas ADD COLUMN active_key TEXT NOT NULL DEFAULT '';
