-- 0005: the revision of each user's secrets, one more at every change of them, so that every
-- replica masks a changed secret in the events it records from then on, whichever replica it
-- was changed through (conversation.Store.SecretsRevision).
CREATE TABLE secret_revisions (
    user_id text COLLATE "C" PRIMARY KEY,
    rev     bigint NOT NULL
);
