-- 0010: where a conversation works, relative to its sandbox's workspace: "project" for the
-- conversations created from now on (OpenHands' clients look for the work in
-- /workspace/project), '' for the older ones, which keep working in the workspace itself.
ALTER TABLE conversations ADD COLUMN work_dir text NOT NULL DEFAULT '';
