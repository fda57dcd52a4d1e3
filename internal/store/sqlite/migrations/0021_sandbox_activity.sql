-- 0021: when a sandbox was last used, as the replicas that use it tell the store
-- (sandbox.Store.TouchSandboxes), so that the replica that pauses a remote backend's idle
-- sandboxes knows of the use another replica makes of them. NULL for never told.
ALTER TABLE sandboxes ADD COLUMN active_at INTEGER;
