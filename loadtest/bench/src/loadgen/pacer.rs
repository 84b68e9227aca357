//! Waking up at a request's intended send time, to the microsecond. Tokio's timers have a
//! resolution of one millisecond: every request would then leave up to a millisecond late, and
//! since latency is measured from the intended time (so that a stalled generator cannot hide
//! queueing), that would add about half a millisecond to every figure, more than the median of a
//! read. A Linux `timerfd` (CLOCK_MONOTONIC, the clock of `std::time::Instant`) registered with the
//! runtime's reactor wakes the scheduler task precisely, and costs one `timerfd_settime` and one
//! `read` per wake-up.

use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::time::{Duration, Instant};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

pub struct Pacer {
    timer: AsyncFd<File>,
}

impl Pacer {
    pub fn new() -> io::Result<Self> {
        // SAFETY: a plain system call with constant arguments; it returns a new descriptor or -1.
        let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a valid descriptor that nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the `File` owns the descriptor and the `AsyncFd` owns the `File`, so it stays open
        // and the same for the `AsyncFd`'s whole life.
        let timer = unsafe { AsyncFd::register_with_interest(File::from(owned), Interest::READABLE) }
            .map_err(|error| error.into_parts().1)?;
        Ok(Self { timer })
    }

    fn arm(&self, after: Duration) -> io::Result<()> {
        // A zero it_value would disarm the timer: wait at least a nanosecond.
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: libc::time_t::try_from(after.as_secs()).unwrap_or(libc::time_t::MAX),
                tv_nsec: libc::c_long::from(after.subsec_nanos() as i32),
            },
        };
        // SAFETY: the descriptor is ours and open; `spec` outlives the call; a null old value is
        // allowed.
        let result = unsafe { libc::timerfd_settime(self.timer.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if result < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }

    /// Returns at `deadline` (at once when it has passed).
    pub async fn sleep_until(&self, deadline: Instant) -> io::Result<()> {
        let now = Instant::now();
        if deadline <= now {
            return Ok(());
        }
        self.arm(deadline - now)?;
        loop {
            let mut ready = self.timer.readable().await?;
            let mut expirations = [0u8; 8];
            match ready.try_io(|timer| timer.get_ref().read(&mut expirations)) {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(error)) => return Err(error),
                Err(_would_block) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn it_wakes_within_a_fraction_of_a_millisecond() {
        let pacer = Pacer::new().expect("timerfd");
        let mut late = Vec::new();
        for _ in 0..20 {
            let deadline = Instant::now() + Duration::from_micros(700);
            pacer.sleep_until(deadline).await.expect("sleep");
            let now = Instant::now();
            assert!(now >= deadline, "never early");
            late.push(now - deadline);
        }
        late.sort();
        // The median, so a busy shared machine does not fail the test; tokio's timers are up to 1 ms late.
        assert!(late[10] < Duration::from_micros(400), "{late:?}");
        pacer.sleep_until(Instant::now() - Duration::from_millis(1)).await.expect("a deadline in the past returns");
    }
}
