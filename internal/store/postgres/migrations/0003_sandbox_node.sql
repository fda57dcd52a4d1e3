-- 0003: the node a sandbox of a node-local backend lives on (sandbox.Sandbox.Node). Records
-- made before have none, until a replica of their machine adopts them (AdoptSandboxes).
ALTER TABLE sandboxes ADD COLUMN node text COLLATE "C" NOT NULL DEFAULT '';
