-- 0015: the node a sandbox of a node-local backend lives on (sandbox.Sandbox.Node). Records
-- made before have none, until a server of their machine adopts them (AdoptSandboxes).
ALTER TABLE sandboxes ADD COLUMN node TEXT NOT NULL DEFAULT '';
