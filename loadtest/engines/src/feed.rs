//! The generator side of a load: a thread of its own turns ids into orders and orders into what
//! a database takes (JSON for `COPY`, BSON documents for `insert_many`), in batches sent over a
//! bounded channel, so generating overlaps with the database's work and never runs far ahead.

use anyhow::Result;
use orders_core::Order;
use orders_dataset::Profile;
use tokio::sync::mpsc;

/// Batches generated ahead of the writer.
const QUEUED_BATCHES: usize = 4;

/// Batches of `encode(order)` for ids `1..=profile.orders`, in id order. The first error ends the
/// stream (it is the last item received).
pub fn batches<T, F>(profile: Profile, batch_size: u64, encode: F) -> mpsc::Receiver<Result<Vec<T>>>
where
    T: Send + 'static,
    F: Fn(Order) -> Result<T> + Send + 'static,
{
    let (sender, receiver) = mpsc::channel(QUEUED_BATCHES);
    std::thread::spawn(move || {
        let mut first = 1;
        while first <= profile.orders {
            let last = (first + batch_size - 1).min(profile.orders);
            let batch: Result<Vec<T>> = (first..=last).map(|id| profile.order(id).and_then(&encode)).collect();
            let failed = batch.is_err();
            // A closed channel means the writer gave up; its error is reported there.
            if sender.blocking_send(batch).is_err() || failed {
                return;
            }
            first = last + 1;
        }
    });
    receiver
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_cover_every_id_once_in_order() {
        let profile = Profile { seed: 1, orders: 25, customers: 3, products: 9, items: 2, note_bytes: 0 };
        let mut receiver = batches(profile, 10, |order| Ok(order.id.get()));
        let mut sizes = Vec::new();
        let mut ids = Vec::new();
        while let Some(batch) = receiver.blocking_recv() {
            let batch = batch.expect("batch");
            sizes.push(batch.len());
            ids.extend(batch);
        }
        assert_eq!(sizes, [10, 10, 5]);
        assert_eq!(ids, (1..=25).collect::<Vec<_>>());
    }

    #[test]
    fn an_encoding_error_ends_the_stream() {
        let profile = Profile { seed: 1, orders: 25, customers: 3, products: 9, items: 2, note_bytes: 0 };
        let mut receiver =
            batches(profile, 10, |order| if order.id.get() == 12 { anyhow::bail!("no") } else { Ok(()) });
        assert!(receiver.blocking_recv().expect("first").is_ok());
        assert!(receiver.blocking_recv().expect("second").is_err());
        assert!(receiver.blocking_recv().is_none());
    }
}
