//! When an answer really arrived: the kernel's receive timestamp of the bytes just read
//! (`SO_TIMESTAMPNS`, delivered with `recvmsg`), on the monotonic clock of `Instant`. With it a
//! response's latency does not depend on when the generator got round to reading it, so the
//! generator can let answers wait while it sleeps until the next send (one wake-up per send
//! instead of one per send and one per answer, which is most of its CPU time on a small machine)
//! and still time them to the microsecond. Where the kernel gives no timestamp, the time of the
//! read stands in (Linux switches receive timestamps on for the whole machine a moment after the
//! first socket asks, so the generator opens its first connections before it starts).

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `SO_TIMESTAMPNS` (= `SCM_TIMESTAMPNS`) of Linux's generic socket options (x86-64, arm64, and
/// every architecture whose `time_t` is 64 bits), with a `struct timespec` of `CLOCK_REALTIME`.
const SO_TIMESTAMPNS: libc::c_int = 35;

/// Asks the kernel to timestamp what `socket` receives; false where it cannot.
pub fn enable(socket: &impl AsRawFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: a valid descriptor, a pointer to an int that lives through the call and its size.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_TIMESTAMPNS,
            (&raw const on).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    result == 0
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

/// One non-blocking `recvmsg` into `buffer`: the bytes read and the kernel's timestamp of them.
pub fn receive(fd: RawFd, buffer: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
    let mut iov = libc::iovec { iov_base: buffer.as_mut_ptr().cast(), iov_len: buffer.len() };
    // Room for one control message with a timespec, aligned as cmsghdr wants.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; every field that matters is set below.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &raw mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = size_of_val(&control) as _;
    // SAFETY: `message` points at `iov` (into `buffer`) and `control`, all alive and writable for
    // the call; the kernel writes at most their given lengths.
    let read = unsafe { libc::recvmsg(fd, &raw mut message, libc::MSG_DONTWAIT) };
    if read < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: walking the control messages the kernel wrote into `control`, with the libc macros
    // that stay within `msg_controllen`; the timespec is read unaligned.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&raw const message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == SO_TIMESTAMPNS {
                let time: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast());
                stamp =
                    u64::try_from(time.tv_sec).ok().map(|s| Duration::new(s, u32::try_from(time.tv_nsec).unwrap_or(0)));
            }
            header = libc::CMSG_NXTHDR(&raw const message, header);
        }
    }
    Ok((read as usize, stamp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

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
