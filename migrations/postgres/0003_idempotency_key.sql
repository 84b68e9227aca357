-- Idempotency-Key of POST /orders, stored with the order in the same INSERT so a retried request
-- can never make a second order. NULL for every order created without the header (the seeded
-- data, the benchmark's inserts): the partial unique index holds only the keyed rows, so an
-- insert without a key costs what it did before (a NULL column costs no space in a heap tuple of
-- this width). The column is never part of the order document the API returns.
ALTER TABLE orders ADD COLUMN IF NOT EXISTS idempotency_key text;
CREATE UNIQUE INDEX IF NOT EXISTS orders_idempotency_key ON orders (idempotency_key) WHERE idempotency_key IS NOT NULL;
