//! `HeldBody`: a response body that keeps its request's `MAX_IN_FLIGHT` place (`Admitted`) until
//! hyper has taken the last of it, so that an answer read slowly still counts as in flight. Without
//! it the place was given back when the handler returned, before a byte of the body was written,
//! and every slow reader could hold a whole answer (a list of up to `MAX_LIST_BYTES`) on one of
//! `MAX_CONNECTIONS` connections; with it at most `MAX_IN_FLIGHT` answers are held at once.
//!
//! hyper takes a body's frames only while its write buffer has room (about 400 kB) and drops the
//! body after the last one, so a large frame is handed out in copied pieces of `PIECE` bytes: the
//! answer's own buffer is freed with the place, and what outlives them is at most hyper's buffer.

use crate::admission::Admitted;
use axum::body::Body;
use hyper::body::{Body as HttpBody, Bytes, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// The largest piece handed to hyper at once.
pub const PIECE: usize = 64 * 1024;

pub struct HeldBody {
    inner: Body,
    /// What is left of a large data frame, handed out a piece at a time.
    rest: Bytes,
    place: Option<Admitted>,
}

impl HeldBody {
    pub fn new(inner: Body, place: Admitted) -> Self {
        Self { inner, rest: Bytes::new(), place: Some(place) }
    }

    /// The next piece of `rest`, copied so that hyper never holds a reference to the whole buffer;
    /// the buffer is dropped with the last piece.
    fn next_piece(&mut self) -> Bytes {
        let len = self.rest.len().min(PIECE);
        let piece = Bytes::copy_from_slice(&self.rest[..len]);
        if len == self.rest.len() {
            self.rest = Bytes::new();
        } else {
            let _ = self.rest.split_to(len);
        }
        piece
    }
}

impl HttpBody for HeldBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if !this.rest.is_empty() {
            return Poll::Ready(Some(Ok(Frame::data(this.next_piece()))));
        }
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        match frame {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) if data.len() > PIECE => {
                    this.rest = data;
                    Poll::Ready(Some(Ok(Frame::data(this.next_piece()))))
                }
                Ok(data) => Poll::Ready(Some(Ok(Frame::data(data)))),
                Err(frame) => Poll::Ready(Some(Ok(frame))),
            },
            other => {
                this.place = None;
                Poll::Ready(other)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let rest = self.rest.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::Admission;
    use std::sync::Arc;

    async fn next(body: &mut HeldBody) -> Option<Bytes> {
        std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx))
            .await
            .map(|frame| frame.expect("frame").into_data().expect("data"))
    }

    #[tokio::test]
    async fn the_place_is_kept_until_the_last_piece_is_taken() {
        let admission = Arc::new(Admission::new(1));
        let answer: Vec<u8> = (0..PIECE * 5 / 2).map(|i| i as u8).collect();
        let place = admission.try_admit().expect("a place");
        let mut body = HeldBody::new(Body::from(answer.clone()), place);
        assert_eq!(body.size_hint().exact(), Some(answer.len() as u64), "the length is known for Content-Length");
        let mut received = Vec::new();
        while let Some(piece) = next(&mut body).await {
            assert!(piece.len() <= PIECE);
            received.extend_from_slice(&piece);
            assert_eq!(body.size_hint().exact(), Some((answer.len() - received.len()) as u64));
            if received.len() < answer.len() {
                assert!(!body.is_end_stream());
                assert_eq!(admission.in_flight(), 1, "held while pieces remain");
            }
        }
        assert_eq!(received, answer);
        assert!(body.is_end_stream());
        assert_eq!(admission.in_flight(), 0, "given back at the end");
    }

    #[tokio::test]
    async fn a_body_dropped_unread_gives_its_place_back() {
        let admission = Arc::new(Admission::new(1));
        let mut body = HeldBody::new(Body::from(vec![0_u8; PIECE * 3]), admission.try_admit().expect("a place"));
        assert_eq!(next(&mut body).await.map(|piece| piece.len()), Some(PIECE));
        assert!(admission.try_admit().is_none(), "held");
        drop(body);
        assert!(admission.try_admit().is_some(), "a client gone away frees the place");
    }

    #[tokio::test]
    async fn small_and_empty_bodies_pass_through() {
        let admission = Arc::new(Admission::new(1));
        let mut small = HeldBody::new(Body::from("ok"), admission.try_admit().expect("a place"));
        assert_eq!(next(&mut small).await.as_deref(), Some(&b"ok"[..]));
        assert_eq!(next(&mut small).await, None);
        assert_eq!(admission.in_flight(), 0);
        let empty = HeldBody::new(Body::empty(), admission.try_admit().expect("a place"));
        assert!(empty.is_end_stream(), "hyper drops an empty body at once, and its place with it");
    }
}
