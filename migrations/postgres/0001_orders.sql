-- The orders table of study S1: the whole order as one jsonb document, keyed by its id.
CREATE TABLE IF NOT EXISTS orders (
    id  bigint PRIMARY KEY,
    doc jsonb  NOT NULL
);

-- Customer listing: equality on the customer id, newest (largest id) first.
CREATE INDEX IF NOT EXISTS orders_customer ON orders (((doc->'customer'->>'id')::bigint), id);

-- Product search: `doc->'items' @> '[{"product_id": N}]'`. jsonb_path_ops indexes hashes of
-- paths to values: smaller than jsonb_ops and serves @>, but not the key-exists operators.
CREATE INDEX IF NOT EXISTS orders_items ON orders USING gin ((doc->'items') jsonb_path_ops);
