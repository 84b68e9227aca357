//! The bytes of a Prometheus remote-write request (protocol 1.0): a `prometheus.WriteRequest`
//! protobuf message (`prompb/types.proto`: time series of labels, float samples and native
//! histograms), compressed in snappy's block format. Both are written by hand: the messages are
//! small and few (a dozen series a second), and snappy allows a block of nothing but literals,
//! which every decoder reads. Field numbers are those of Prometheus' `prompb`.

use std::collections::BTreeMap;

/// One series of the request: its labels (`__name__` among them) and its one value now.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: Vec<(String, String)>,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A counter or gauge sample.
    Sample(f64),
    /// A cumulative native histogram with integer counts.
    Histogram(NativeHistogram),
}

/// A native (sparse, exponential) histogram: bucket `i` holds the observations in
/// `(base^(i-1), base^i]` with `base = 2^(2^-schema)`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NativeHistogram {
    pub schema: i32,
    pub count: u64,
    pub sum: f64,
    /// Bucket index → observations (positive buckets only; latencies are positive).
    pub buckets: BTreeMap<i32, u64>,
}

/// The zero bucket's width that Prometheus' own client libraries use (2^-128).
const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

impl NativeHistogram {
    pub fn new(schema: i32) -> Self {
        Self { schema, ..Self::default() }
    }

    /// Adds `count` observations of `value` (> 0).
    pub fn observe(&mut self, value: f64, count: u64) {
        if count == 0 || value <= 0.0 {
            return;
        }
        let index = (value.log2() * f64::from(1_u32 << self.schema.clamp(0, 8))).ceil() as i32;
        *self.buckets.entry(index).or_default() += count;
        self.count += count;
        self.sum += value * count as f64;
    }
}

/// `prometheus.WriteRequest` with every series' value at `timestamp_ms`.
pub fn write_request(series: &[Series], timestamp_ms: i64) -> Vec<u8> {
    let mut out = Vec::new();
    for one in series {
        let mut message = Vec::new();
        let mut labels: Vec<&(String, String)> = one.labels.iter().collect();
        labels.sort(); // the remote-write protocol wants them sorted by name
        for (name, value) in labels {
            let mut label = Vec::new();
            bytes_field(&mut label, 1, name.as_bytes());
            bytes_field(&mut label, 2, value.as_bytes());
            bytes_field(&mut message, 1, &label);
        }
        match &one.value {
            Value::Sample(value) => {
                let mut sample = Vec::new();
                double_field(&mut sample, 1, *value);
                varint_field(&mut sample, 2, timestamp_ms as u64);
                bytes_field(&mut message, 2, &sample);
            }
            Value::Histogram(histogram) => bytes_field(&mut message, 4, &histogram_message(histogram, timestamp_ms)),
        }
        bytes_field(&mut out, 1, &message);
    }
    out
}

fn histogram_message(histogram: &NativeHistogram, timestamp_ms: i64) -> Vec<u8> {
    let mut out = Vec::new();
    varint_field(&mut out, 1, histogram.count); // count_int
    double_field(&mut out, 3, histogram.sum);
    varint_field(&mut out, 4, zigzag(i64::from(histogram.schema)));
    double_field(&mut out, 5, ZERO_THRESHOLD);
    varint_field(&mut out, 6, 0); // zero_count_int
    // Runs of adjacent buckets are spans; each span's offset is the gap since the previous one
    // (the first: its index), and every count is written as the change from the one before.
    let mut spans: Vec<(i32, u32)> = Vec::new();
    let mut deltas = Vec::new();
    let (mut previous_index, mut previous_count): (Option<i32>, i64) = (None, 0);
    for (&index, &count) in &histogram.buckets {
        match previous_index {
            Some(p) if index == p + 1 => {
                if let Some(last) = spans.last_mut() {
                    last.1 += 1;
                }
            }
            Some(p) => spans.push((index - p - 1, 1)),
            None => spans.push((index, 1)),
        }
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        deltas.push(count - previous_count);
        previous_index = Some(index);
        previous_count = count;
    }
    for (offset, length) in spans {
        let mut span = Vec::new();
        varint_field(&mut span, 1, zigzag(i64::from(offset)));
        varint_field(&mut span, 2, u64::from(length));
        bytes_field(&mut out, 11, &span);
    }
    if !deltas.is_empty() {
        let mut packed = Vec::new();
        for delta in deltas {
            varint(&mut packed, zigzag(delta));
        }
        bytes_field(&mut out, 12, &packed);
    }
    varint_field(&mut out, 15, timestamp_ms as u64);
    out
}

/// Snappy's block format with every byte a literal: the length, then literals of up to 64 KiB.
pub fn snappy_block(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 8 + data.len() / 65536 * 3);
    varint(&mut out, data.len() as u64);
    for chunk in data.chunks(65536) {
        let n = chunk.len() - 1;
        if n < 60 {
            out.push((n as u8) << 2);
        } else if n < 256 {
            out.extend_from_slice(&[60 << 2, n as u8]);
        } else {
            out.push(61 << 2);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        out.extend_from_slice(chunk);
    }
    out
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn varint_field(out: &mut Vec<u8>, field: u32, value: u64) {
    varint(out, u64::from(field) << 3);
    varint(out, value);
}

fn double_field(out: &mut Vec<u8>, field: u32, value: f64) {
    varint(out, (u64::from(field) << 3) | 1);
    out.extend_from_slice(&value.to_le_bytes());
}

fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    varint(out, (u64::from(field) << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag_are_protobufs() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        assert_eq!([zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)], [0, 1, 2, 3]);
    }

    #[test]
    fn a_sample_series_is_encoded_field_by_field() {
        let series = Series { labels: vec![("__name__".into(), "up".into())], value: Value::Sample(1.0) };
        let bytes = write_request(&[series], 5);
        let label = [&[0x0a, 8][..], b"__name__", &[0x12, 2], b"up"].concat();
        let sample = [&[0x09][..], &1.0_f64.to_le_bytes(), &[0x10, 5]].concat();
        let message = [&[0x0a, label.len() as u8][..], &label, &[0x12, sample.len() as u8], &sample].concat();
        assert_eq!(bytes, [&[0x0a, message.len() as u8][..], &message].concat());
    }

    #[test]
    fn labels_are_sorted_by_name() {
        let labels = vec![("target".to_owned(), "pg".to_owned()), ("__name__".to_owned(), "x".to_owned())];
        let bytes = write_request(&[Series { labels, value: Value::Sample(0.0) }], 0);
        let name_at = bytes.windows(8).position(|w| w == b"__name__").expect("name");
        let target_at = bytes.windows(6).position(|w| w == b"target").expect("target");
        assert!(name_at < target_at);
    }

    #[test]
    fn observations_land_in_the_bucket_whose_upper_bound_holds_them() {
        let mut histogram = NativeHistogram::new(3);
        histogram.observe(1.0, 2); // exactly a bound: bucket 0 is (2^-1/8, 1]
        histogram.observe(1.05, 1); // (1, 2^1/8 = 1.0905]: bucket 1
        histogram.observe(0.001, 3); // log2 = -9.97, times 8 = -79.7: bucket -79
        histogram.observe(0.0, 5); // not a latency: ignored
        assert_eq!(histogram.buckets, BTreeMap::from([(-79, 3), (0, 2), (1, 1)]));
        assert_eq!(histogram.count, 6);
        assert!((histogram.sum - 3.053).abs() < 1e-9);
    }

    #[test]
    fn buckets_become_spans_and_deltas() {
        let mut histogram = NativeHistogram::new(3);
        histogram.buckets = BTreeMap::from([(-2, 4), (-1, 6), (3, 1)]);
        histogram.count = 11;
        let bytes = histogram_message(&histogram, 7);
        // Spans: offset -2 length 2, then offset 3 (indices 0..2 skipped) length 1.
        let span = |offset: i64, length: u8| [&[0x5a, 4, 0x08][..], &[zigzag(offset) as u8], &[0x10, length]].concat();
        let spans = [span(-2, 2), span(3, 1)].concat();
        assert!(bytes.windows(spans.len()).any(|w| w == spans.as_slice()), "{bytes:?}");
        // Deltas 4, +2, -5, packed.
        let deltas = [0x62, 3, zigzag(4) as u8, zigzag(2) as u8, zigzag(-5) as u8];
        assert!(bytes.windows(5).any(|w| w == deltas), "{bytes:?}");
        assert!(bytes.starts_with(&[0x08, 11]), "count_int first");
    }

    /// Reads a literal-only snappy block back (what any snappy decoder does with one).
    fn unsnap(block: &[u8]) -> Vec<u8> {
        let (mut length, mut shift, mut at) = (0_usize, 0, 0);
        loop {
            let byte = block[at];
            at += 1;
            length |= usize::from(byte & 0x7f) << shift;
            shift += 7;
            if byte < 0x80 {
                break;
            }
        }
        let mut out = Vec::new();
        while at < block.len() {
            let tag = block[at];
            assert_eq!(tag & 3, 0, "literals only");
            let (n, skip) = match tag >> 2 {
                60 => (usize::from(block[at + 1]), 2),
                61 => (usize::from(u16::from_le_bytes([block[at + 1], block[at + 2]])), 3),
                small => (usize::from(small), 1),
            };
            at += skip;
            out.extend_from_slice(&block[at..at + n + 1]);
            at += n + 1;
        }
        assert_eq!(out.len(), length);
        out
    }

    #[test]
    fn a_snappy_block_of_literals_holds_the_data() {
        for size in [0, 1, 60, 61, 256, 257, 65536, 200_000] {
            let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            assert_eq!(unsnap(&snappy_block(&data)), data, "size {size}");
        }
    }
}
