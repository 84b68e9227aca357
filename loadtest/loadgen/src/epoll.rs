//! A small safe face of Linux's `epoll` for the open loop: sockets registered under a token, with
//! level-triggered read interest and write interest only while a socket still has something to
//! send (a connect in progress, a request the kernel did not take whole), and one call that says
//! which sockets are ready. The open loop drives it itself, with no runtime in between.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd as _, OwnedFd, RawFd};
use std::time::Duration;

/// What a socket is ready for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready {
    pub token: usize,
    pub readable: bool,
    pub writable: bool,
    /// An error or hang-up: the next read or write says which.
    pub broken: bool,
}

pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

fn interest(writable: bool) -> u32 {
    let read = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
    if writable { read | libc::EPOLLOUT as u32 } else { read }
}

impl Epoll {
    pub fn new() -> io::Result<Self> {
        // SAFETY: a plain system call; it returns a new descriptor or -1.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a valid descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(Self { fd, events: vec![libc::epoll_event { events: 0, u64: 0 }; 256] })
    }

    fn control(&self, op: libc::c_int, fd: RawFd, token: usize, writable: bool) -> io::Result<()> {
        let mut event = libc::epoll_event { events: interest(writable), u64: token as u64 };
        // SAFETY: both descriptors are open; `event` lives through the call.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &raw mut event) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Watches `socket` under `token`: readable always, writable too when `writable`.
    pub fn add(&self, socket: &impl AsRawFd, token: usize, writable: bool) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_ADD, socket.as_raw_fd(), token, writable)
    }

    /// Changes whether `socket` is watched for being writable.
    pub fn modify(&self, socket: &impl AsRawFd, token: usize, writable: bool) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_MOD, socket.as_raw_fd(), token, writable)
    }

    /// The sockets ready now, waiting at most `timeout` (whole milliseconds, rounded down) for the
    /// first; an interrupted wait returns nothing.
    pub fn wait(&mut self, timeout: Duration) -> io::Result<Vec<Ready>> {
        let millis = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        let capacity = i32::try_from(self.events.len()).unwrap_or(i32::MAX);
        // SAFETY: `events` has room for `capacity` entries, which the kernel fills at most.
        let n = unsafe { libc::epoll_wait(self.fd.as_raw_fd(), self.events.as_mut_ptr(), capacity, millis) };
        if n < 0 {
            let error = io::Error::last_os_error();
            return if error.kind() == io::ErrorKind::Interrupted { Ok(Vec::new()) } else { Err(error) };
        }
        let ready = self.events[..n as usize]
            .iter()
            .map(|e| {
                let flags = e.events;
                Ready {
                    token: e.u64 as usize,
                    readable: flags & (libc::EPOLLIN | libc::EPOLLRDHUP) as u32 != 0,
                    writable: flags & libc::EPOLLOUT as u32 != 0,
                    broken: flags & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0,
                }
            })
            .collect();
        if n as usize == self.events.len() {
            // A full list: there may be more next time; make room for them.
            self.events.resize(self.events.len() * 2, libc::epoll_event { events: 0, u64: 0 });
        }
        Ok(ready)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn a_socket_is_reported_readable_under_its_token_and_writable_only_when_asked() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let client = std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (mut server, _) = listener.accept().expect("accept");
        let mut epoll = Epoll::new().expect("epoll");
        epoll.add(&client, 7, false).expect("add");
        assert!(epoll.wait(Duration::ZERO).expect("wait").is_empty(), "nothing to read, writes not asked for");
        server.write_all(b"hi").expect("write");
        let ready = epoll.wait(Duration::from_millis(100)).expect("wait");
        assert_eq!(ready, [Ready { token: 7, readable: true, writable: false, broken: false }]);
        epoll.modify(&client, 7, true).expect("modify");
        let ready = epoll.wait(Duration::ZERO).expect("wait");
        assert!(ready[0].writable && ready[0].readable, "{ready:?}");
        drop(server);
        epoll.modify(&client, 7, false).expect("modify");
        assert!(epoll.wait(Duration::from_millis(100)).expect("wait")[0].readable, "a closed peer reads as readable");
    }
}
