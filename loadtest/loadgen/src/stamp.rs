//! When an answer really arrived: the kernel's receive timestamp of the bytes just read
//! (`SO_TIMESTAMPNS`, delivered with `recvmsg`), on the monotonic clock of `Instant`. With it a
//! response's latency does not depend on when the generator got round to reading it, so the
//! generator can let answers wait while it sleeps until the next send (one wake-up per send
//! instead of one per send and one per answer, which is most of its CPU time on a small machine)
//! and still time them to the microsecond. Where the kernel gives no timestamp, the time of the
//! read stands in (Linux switches receive timestamps on for the whole machine a moment after the
//! first socket asks, so the generator opens its first connections before it starts).

use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, setsockopt, sockopt};
use std::io;
use std::os::fd::{AsFd, RawFd};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Asks the kernel to timestamp what `socket` receives (`SO_TIMESTAMPNS`); false where it cannot.
pub fn enable(socket: &impl AsFd) -> bool {
    setsockopt(socket, sockopt::ReceiveTimestampns, &true).is_ok()
}

/// Converts the kernel's wall-clock timestamps to `Instant`s: both clocks are read once, and a
/// timestamp is placed at its distance from that moment (a clock step during a run would shift
/// the figures; NTP's slewing does not matter over minutes).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    wall: Duration,
    mono: Instant,
}

impl Clock {
    pub fn now() -> Self {
        let mono = Instant::now();
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Self { wall, mono }
    }

    pub fn instant(&self, wall: Duration) -> Instant {
        if wall >= self.wall {
            self.mono + (wall - self.wall)
        } else {
            self.mono.checked_sub(self.wall - wall).unwrap_or(self.mono)
        }
    }
}

thread_local! {
    /// Room for one control message with a timespec: made once per thread, since `receive` runs
    /// for every answer.
    static CONTROL: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(nix::cmsg_space!(nix::sys::time::TimeSpec));
}

/// One non-blocking `recvmsg` into `buffer`: the bytes read and the kernel's timestamp of them.
pub fn receive(fd: RawFd, buffer: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
    CONTROL.with_borrow_mut(|control| {
        let mut iov = [io::IoSliceMut::new(buffer)];
        let message = recvmsg::<()>(fd, &mut iov, Some(control.as_mut_slice()), MsgFlags::MSG_DONTWAIT)
            .map_err(io::Error::from)?;
        let stamp = message.cmsgs().into_iter().flatten().find_map(|cmsg| match cmsg {
            ControlMessageOwned::ScmTimestampns(time) => {
                u64::try_from(time.tv_sec()).ok().map(|s| Duration::new(s, u32::try_from(time.tv_nsec()).unwrap_or(0)))
            }
            _ => None,
        });
        Ok((message.bytes, stamp))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::os::fd::AsRawFd as _;

    #[test]
    fn what_arrives_carries_the_kernels_time_of_arrival() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut client = std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        assert!(enable(&server));
        // The kernel turns timestamping on shortly after the first socket asks for it.
        std::thread::sleep(Duration::from_millis(50));
        let clock = Clock::now();
        client.write_all(b"hello").expect("write");
        let sent = Instant::now();
        std::thread::sleep(Duration::from_millis(30));
        let mut buffer = [0u8; 16];
        let (read, stamp) = receive(server.as_raw_fd(), &mut buffer).expect("recvmsg");
        assert_eq!(&buffer[..read], b"hello");
        let arrived = clock.instant(stamp.expect("a timestamp"));
        // Arrived right after the write, not 30 ms later when it was read.
        assert!(arrived.saturating_duration_since(sent) < Duration::from_millis(10), "{:?}", arrived - sent);
        assert!(sent.saturating_duration_since(arrived) < Duration::from_millis(10));
        let would_block = receive(server.as_raw_fd(), &mut buffer).expect_err("nothing more");
        assert_eq!(would_block.kind(), io::ErrorKind::WouldBlock);
    }
}
