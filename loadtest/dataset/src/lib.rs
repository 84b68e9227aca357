//! `orders-dataset`: the data set both the seeder and the load generators work from, and nothing
//! else. `prng` is the seeder's own random numbers, `manifest` the record of what was seeded
//! where (id ranges, items per order, note size), read by the load generator and the fairness
//! gate. It depends on the domain types of `orders-core` only.
//!
//! The data set: a `Profile` (seed, counts, items per order, note size) and the deterministic
//! generator that turns an order id into its `Order`. Everything about order `id` (customer,
//! status, items, note, `created_at`, `updated_at`) comes from `stream(seed, Order, id)`, and a
//! customer's name, e-mail and address (a product's SKU, name and price) from its own stream, so
//! the same customer looks the same in every order. Ids are `1..=orders`; `created_at` grows with
//! the id (30 s apart from 2025-01-01, with jitter), as the service's time-ordered ids do.

pub mod manifest;
pub mod prng;
pub mod words;

use crate::prng::{Domain, SplitMix64, stream};
use anyhow::{Context, Result, bail};
use orders_core::values::{Bounded, Code, Email, Note, Text};
use orders_core::{
    Customer, CustomerId, Item, MAX_SAFE_INTEGER, Order, OrderId, ProductId, Shipping, Status, Timestamp,
};
use words::{CITIES, FIRST_NAMES, LAST_NAMES, NOTE_WORDS, PRODUCT_ADJECTIVES, PRODUCT_NOUNS, STREETS};

/// `created_at` of order 1 (before jitter): 2025-01-01T00:00:00.000Z.
const START_MS: i64 = 1_735_689_600_000;
/// Orders are this far apart in time, plus up to as much jitter.
const SPACING_MS: u64 = 30_000;
/// A non-pending order was last updated up to two weeks after it was created.
const MAX_UPDATE_DELAY_MS: u64 = 14 * 24 * 3_600_000;
/// Upper bound of `--orders`, which keeps every timestamp inside four-digit years.
pub const MAX_ORDERS: u64 = 1_000_000_000;
/// Status shares in percent, summing to 100: most orders of a shop are long delivered.
const STATUS_WEIGHTS: [(Status, u64); 5] =
    [(Status::Delivered, 55), (Status::Shipped, 15), (Status::Paid, 15), (Status::Pending, 10), (Status::Cancelled, 5)];

/// What is seeded. The defaults are study S1's: 1,000,000 orders of three items (about 600 bytes
/// of JSON), 100,000 customers (about 10 orders each) and 100,000 products (so a product search
/// matches about 30 orders).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub seed: u64,
    pub orders: u64,
    pub customers: u64,
    pub products: u64,
    pub items: u32,
    pub note_bytes: u32,
}

impl Profile {
    /// Refuses counts the API or the generator cannot honour, naming the flag.
    pub fn check(&self) -> Result<()> {
        if !(1..=MAX_ORDERS).contains(&self.orders) {
            bail!("--orders must be from 1 to {MAX_ORDERS}");
        }
        if !(1..=MAX_SAFE_INTEGER).contains(&self.customers) {
            bail!("--customers must be from 1 to {MAX_SAFE_INTEGER}");
        }
        if !(1..=MAX_SAFE_INTEGER).contains(&self.products) {
            bail!("--products must be from 1 to {MAX_SAFE_INTEGER}");
        }
        if !(1..=1000).contains(&self.items) {
            bail!("--items must be from 1 to 1000 (the API's limit)");
        }
        if u64::from(self.items) > self.products {
            bail!("--items ({}) cannot exceed --products ({}): an order's products differ", self.items, self.products);
        }
        if self.note_bytes as usize > Note::MAX_BYTES {
            bail!("--note-bytes must be at most {}", Note::MAX_BYTES);
        }
        Ok(())
    }

    /// The order with this id (`1..=orders`), always the same for the same profile.
    pub fn order(&self, id: u64) -> Result<Order> {
        let mut rng = stream(self.seed, Domain::Order, id);
        let customer_id = rng.between(1, self.customers);
        let (customer, shipping, currency) = customer(self.seed, customer_id)?;
        let status = status(&mut rng);
        let items = self
            .product_ids(&mut rng)
            .into_iter()
            .map(|product| item(self.seed, product, &mut rng))
            .collect::<Result<Vec<_>>>()?;
        let total_cents = items.iter().map(Item::line_total_cents).sum();
        let created = START_MS + ((id - 1) * SPACING_MS + rng.below(SPACING_MS)) as i64;
        let updated = if status == Status::Pending { created } else { created + rng.below(MAX_UPDATE_DELAY_MS) as i64 };
        let note = match self.note_bytes {
            0 => None,
            bytes => Some(Note::new(note_text(&mut rng, bytes as usize)).map_err(|e| field("note", e))?),
        };
        Ok(Order {
            id: OrderId::new(id).map_err(|e| field("id", e))?,
            customer,
            status,
            items,
            total_cents,
            currency: Code::new(currency).map_err(|e| field("currency", e))?,
            shipping,
            note,
            created_at: Timestamp::from_millis(created),
            updated_at: Timestamp::from_millis(updated),
        })
    }

    /// The mean size of an order as JSON (what the API returns), over up to 1,000 ids spread
    /// evenly across the data set.
    pub fn approx_doc_bytes(&self) -> Result<u64> {
        let samples = self.orders.min(1000);
        let mut total = 0;
        for n in 0..samples {
            let id = 1 + n * self.orders / samples;
            total += serde_json::to_vec(&self.order(id)?).context("order as JSON")?.len() as u64;
        }
        Ok(total / samples)
    }

    /// `items` distinct product ids.
    fn product_ids(&self, rng: &mut SplitMix64) -> Vec<u64> {
        let wanted = self.items as usize;
        if self.products <= 4 * u64::from(self.items) {
            // Few products to choose from: a partial Fisher-Yates shuffle of all of them.
            let mut all: Vec<u64> = (1..=self.products).collect();
            for i in 0..wanted {
                let j = i + rng.below((all.len() - i) as u64) as usize;
                all.swap(i, j);
            }
            all.truncate(wanted);
            return all;
        }
        let mut chosen = Vec::with_capacity(wanted);
        while chosen.len() < wanted {
            let product = rng.between(1, self.products);
            if !chosen.contains(&product) {
                chosen.push(product);
            }
        }
        chosen
    }
}

fn field(name: &str, reason: String) -> anyhow::Error {
    anyhow::anyhow!("generated {name} is invalid: {reason}")
}

/// A customer's identity, shipping address and currency, from the customer's own stream.
fn customer(seed: u64, id: u64) -> Result<(Customer, Shipping, &'static str)> {
    let mut rng = stream(seed, Domain::Customer, id);
    let (first, first_mail) = rng.pick(FIRST_NAMES);
    let (last, last_mail) = rng.pick(LAST_NAMES);
    let city = rng.pick(CITIES);
    let street = format!("{} {}", rng.pick(STREETS), rng.between(1, 199));
    let postal_code =
        format!("{:0width$}", rng.below(10u64.pow(city.postal_digits)), width = city.postal_digits as usize);
    let customer = Customer {
        id: CustomerId::new(id).map_err(|e| field("customer.id", e))?,
        name: Text::new(format!("{first} {last}")).map_err(|e| field("customer.name", e))?,
        email: Email::new(format!("{first_mail}.{last_mail}.{id}@example.com"))
            .map_err(|e| field("customer.email", e))?,
    };
    let shipping = Shipping {
        street: Text::new(street).map_err(|e| field("shipping.street", e))?,
        city: Text::new(city.name).map_err(|e| field("shipping.city", e))?,
        postal_code: Text::new(postal_code).map_err(|e| field("shipping.postal_code", e))?,
        country: Code::new(city.country).map_err(|e| field("shipping.country", e))?,
    };
    Ok((customer, shipping, city.currency))
}

/// One order line: the product's SKU, name and price from the product's stream, the quantity
/// from the order's.
fn item(seed: u64, product: u64, order_rng: &mut SplitMix64) -> Result<Item> {
    let mut rng = stream(seed, Domain::Product, product);
    let name = format!("{} {}", rng.pick(PRODUCT_ADJECTIVES), rng.pick(PRODUCT_NOUNS));
    let price = rng.between(1, 200) * 100 - 1;
    Ok(Item {
        product_id: ProductId::new(product).map_err(|e| field("items.product_id", e))?,
        sku: Text::new(format!("SKU-{product:06}")).map_err(|e| field("items.sku", e))?,
        name: Text::new(name).map_err(|e| field("items.name", e))?,
        quantity: Bounded::new(order_rng.between(1, 3)).map_err(|e| field("items.quantity", e))?,
        unit_price_cents: Bounded::new(price).map_err(|e| field("items.unit_price_cents", e))?,
    })
}

fn status(rng: &mut SplitMix64) -> Status {
    let mut roll = rng.below(100);
    for (status, weight) in STATUS_WEIGHTS {
        if roll < weight {
            return status;
        }
        roll -= weight;
    }
    Status::Delivered
}

/// Exactly `bytes` bytes of ASCII words (also the note of the load generator's new orders).
pub fn note_text(rng: &mut SplitMix64, bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 16);
    while text.len() < bytes {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(rng.pick::<&str>(NOTE_WORDS));
    }
    text.truncate(bytes);
    text
}

#[cfg(test)]
mod tests;
