-- 0005: confirmation mode.
--
-- confirmation_policy is the conversation's confirmation policy as a JSON object
-- ({"kind": "ConfirmRisky", "threshold": "HIGH", "confirm_unknown": true}), a copy of the last
-- confirmation_policy state update in its event log; empty when none was ever set, which
-- never confirms.
ALTER TABLE conversations ADD COLUMN confirmation_policy TEXT NOT NULL DEFAULT '';
