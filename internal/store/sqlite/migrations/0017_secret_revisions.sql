-- 0017: the revision of each user's secrets, one more at every change of them, so that every
-- server masks a changed secret in the events it records from then on, whichever server it
-- was changed through (conversation.Store.SecretsRevision).
CREATE TABLE secret_revisions (
    user_id TEXT PRIMARY KEY,
    rev     INTEGER NOT NULL
) STRICT;
