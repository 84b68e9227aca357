-- The hybrid layout: the fields the API filters on or changes in typed columns, the rest of the
-- order in one jsonb document. The columns are the truth for their fields: `doc` holds the order
-- without `id`, `status`, `updated_at` and `customer.id`, and every answer joins them back in.
-- Product ids stay inside `doc`'s items (they never change, and an item needs its own); the
-- `order_items` table below is what searches use.

-- orders-pg's jsonb table has the same name: refuse its database rather than quietly skipping
-- the CREATE TABLE below and failing on the first insert.
DO $$
BEGIN
    IF to_regclass('orders') IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM pg_attribute
        WHERE attrelid = to_regclass('orders') AND attname = 'customer_id' AND NOT attisdropped
    ) THEN
        RAISE EXCEPTION 'table "orders" exists without "customer_id": this database holds the jsonb layout '
            '(orders-pg); give orders-pg-hybrid a database of its own';
    END IF;
END
$$;

-- fillfactor 80 leaves a fifth of every heap page free, so a status change can put the new row
-- version on the same page: a heap-only (HOT) update, with no new index entries. That also needs
-- no index on a column the update changes, so `status` and `updated_at` have none.
CREATE TABLE IF NOT EXISTS orders (
    id                      bigint      PRIMARY KEY,
    customer_id             bigint      NOT NULL,
    status                  text        NOT NULL,
    updated_at              timestamptz NOT NULL,
    doc                     jsonb       NOT NULL,
    -- Idempotency-Key of POST /orders and the request's fingerprint, as in orders-pg (0003).
    idempotency_key         text,
    idempotency_fingerprint bigint
) WITH (fillfactor = 80);

-- Customer listing: equality on the customer, newest (largest id) first, as orders-pg's
-- expression index orders it.
CREATE INDEX IF NOT EXISTS orders_customer ON orders (customer_id, id);

CREATE UNIQUE INDEX IF NOT EXISTS orders_idempotency_key ON orders (idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Product search: one row per (product, order), written in the same statement as the order.
-- The primary key is the B-tree the search walks (`product_id = $1`), then each order by its id;
-- no GIN index, so no pending list (finding F1 cannot happen here). No foreign key: orders are
-- never deleted, and the check would cost a lookup per row on every insert.
CREATE TABLE IF NOT EXISTS order_items (
    order_id   bigint NOT NULL,
    product_id bigint NOT NULL,
    CONSTRAINT order_items_product PRIMARY KEY (product_id, order_id)
);
