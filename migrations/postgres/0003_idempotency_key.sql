-- Idempotency-Key of POST /orders, stored with the order in the same INSERT (with a fingerprint
-- of the request body, to tell a retry from another request under the same key) so a retried
-- request can never make a second order. NULL for every order created without the header (the
-- seeded data, the benchmark's inserts): the partial unique index holds only the keyed rows, so
-- an insert without a key costs what it did before (NULL columns take no space in the heap tuple:
-- its null bitmap fits in the header's alignment padding). Neither column is part of the order
-- document the API returns.
ALTER TABLE orders
    ADD COLUMN IF NOT EXISTS idempotency_key text,
    ADD COLUMN IF NOT EXISTS idempotency_fingerprint bigint;
CREATE UNIQUE INDEX IF NOT EXISTS orders_idempotency_key ON orders (idempotency_key) WHERE idempotency_key IS NOT NULL;
