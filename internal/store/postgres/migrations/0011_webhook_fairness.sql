-- 0009: fair webhook deliveries. A delivery names its endpoint (the scheme, host and port of
-- its webhook's URL), and claimed_until marks an attempt under way (the claim's lease; NULL
-- once the attempt is recorded), so that claims can cap the attempts under way per user and per
-- endpoint. Deliveries from before take their webhook's URL as their endpoint.
ALTER TABLE webhook_deliveries ADD COLUMN endpoint text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE webhook_deliveries ADD COLUMN claimed_until timestamptz;
UPDATE webhook_deliveries d SET endpoint = w.url FROM webhooks w WHERE w.id = d.webhook_id;
CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (claimed_until) WHERE claimed_until IS NOT NULL;

-- An endpoint of a user's whose attempts keep timing out: timeouts counts them in a row, and
-- nothing is sent to it before not_before. An answer (any) removes the row.
CREATE TABLE webhook_endpoints (
    owner_id   text COLLATE "C" NOT NULL,
    endpoint   text COLLATE "C" NOT NULL,
    timeouts   integer NOT NULL,
    not_before timestamptz NOT NULL,
    PRIMARY KEY (owner_id, endpoint)
);
