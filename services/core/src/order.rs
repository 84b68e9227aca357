//! The order document as both services return it, the validated create request (`NewOrder`) and
//! the validated status change. Every field is a checked type from `values`, so an `Order` read
//! from either database has passed the same rules as one built from a request.

use crate::ids::{CustomerId, OrderId, ProductId};
use crate::time::Timestamp;
use crate::values::{Cents, Country, Currency, Email, Name, Note, Quantity, Sku};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Paid,
    Shipped,
    Delivered,
    Cancelled,
}

impl Status {
    pub const ALL: [Status; 5] = [Status::Pending, Status::Paid, Status::Shipped, Status::Delivered, Status::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Paid => "paid",
            Status::Shipped => "shipped",
            Status::Delivered => "delivered",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        Status::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
            .ok_or_else(|| "must be one of pending, paid, shipped, delivered, cancelled".to_string())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Customer {
    pub id: CustomerId,
    pub name: Name,
    pub email: Email,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    pub product_id: ProductId,
    pub sku: Sku,
    pub name: Name,
    pub quantity: Quantity,
    pub unit_price_cents: Cents,
}

impl Item {
    /// Price of this line; at most 10^18, so it cannot overflow u64.
    pub fn line_total_cents(&self) -> u64 {
        self.quantity.get() * self.unit_price_cents.get()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shipping {
    pub street: Name,
    pub city: Name,
    pub postal_code: Name,
    pub country: Country,
}

/// An order as stored and returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Order {
    pub id: OrderId,
    pub customer: Customer,
    pub status: Status,
    pub items: Vec<Item>,
    pub total_cents: u64,
    pub currency: Currency,
    pub shipping: Shipping,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<Note>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A create request that passed validation. Built only by `NewOrder::parse` (see `validate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrder {
    pub(crate) id: Option<OrderId>,
    pub(crate) customer: Customer,
    pub(crate) status: Status,
    pub(crate) items: Vec<Item>,
    pub(crate) total_cents: u64,
    pub(crate) currency: Currency,
    pub(crate) shipping: Shipping,
    pub(crate) note: Option<Note>,
}

impl NewOrder {
    /// The id the client asked for, if any.
    pub fn requested_id(&self) -> Option<OrderId> {
        self.id
    }

    /// The stored order: `id` is the requested or an assigned one, both timestamps are `now`.
    pub fn into_order(self, id: OrderId, now: Timestamp) -> Order {
        Order {
            id,
            customer: self.customer,
            status: self.status,
            items: self.items,
            total_cents: self.total_cents,
            currency: self.currency,
            shipping: self.shipping,
            note: self.note,
            created_at: now,
            updated_at: now,
        }
    }
}

/// A validated `PATCH /orders/{id}/status` body: set `status`, optionally only when the current
/// status is `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusChange {
    pub status: Status,
    pub from: Option<Status>,
}
