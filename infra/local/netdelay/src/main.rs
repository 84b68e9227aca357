//! orders-netdelay QUEUE:MICROSECONDS [QUEUE:MICROSECONDS ...]
//!
//! A fixed one-way delay for the replicated local stack (infra/local/replicas.sh) on kernels
//! without `tc netem`: an iptables rule in a member's namespace hands every packet it sends to an
//! NFQUEUE queue; this program holds each packet for the queue's delay, then accepts it, in the
//! order they came (only metadata is copied to user space; GSO packets come whole). Packets wait
//! in the kernel's queue (up to 16384; beyond that the kernel drops them, as a full switch buffer
//! would). It stops on SIGTERM or SIGINT; packets still held are dropped when the socket closes
//! (TCP retransmits them).

use std::collections::VecDeque;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nfq::{Message, Queue, Verdict};

const QUEUE_MAX_LEN: u32 = 16384;

fn parse(arg: &str) -> Result<(u16, Duration), String> {
    let (queue, micros) = arg.split_once(':').ok_or_else(|| format!("'{arg}': expected QUEUE:MICROSECONDS"))?;
    let queue: u16 = queue.parse().map_err(|_| format!("'{arg}': bad queue number"))?;
    let micros: u64 = micros.parse().map_err(|_| format!("'{arg}': bad delay"))?;
    if micros > 10_000_000 {
        return Err(format!("'{arg}': a delay above 10 s is not a network"));
    }
    Ok((queue, Duration::from_micros(micros)))
}

static mut STOP: bool = false;

extern "C" fn on_signal(_: libc::c_int) {
    // Only read after ppoll returns EINTR, on the same thread.
    unsafe { STOP = true };
}

fn stop_requested() -> bool {
    unsafe { std::ptr::read_volatile(&raw const STOP) }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() || args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: orders-netdelay QUEUE:MICROSECONDS [QUEUE:MICROSECONDS ...]");
        return ExitCode::from(2);
    }
    let mut queues: Vec<(u16, Duration)> = Vec::new();
    for arg in &args {
        match parse(arg) {
            Ok(q) => queues.push(q),
            Err(e) => {
                eprintln!("orders-netdelay: {e}");
                return ExitCode::from(2);
            }
        }
    }
    match run(&queues) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("orders-netdelay: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(queues: &[(u16, Duration)]) -> std::io::Result<()> {
    unsafe {
        // Wake-ups as close to the release time as the kernel can make them (the default slack
        // is 50 us, a tenth of a 0.5 ms round trip).
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        // A real-time priority, so that a release is not late behind the busy processes of a
        // loaded two-core machine (root has it; without it the delay only grows less even).
        let param = libc::sched_param { sched_priority: 50 };
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
            eprintln!(
                "orders-netdelay: no real-time priority ({}): releases may be late under load",
                std::io::Error::last_os_error()
            );
        }
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    // The nfq crate does not expose its netlink socket, which this program must poll: the socket
    // Queue::open creates takes the lowest free descriptor (POSIX), found here first. The process
    // has one thread, so nothing opens a descriptor in between.
    let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    unsafe { libc::close(fd) };
    let mut queue = Queue::open()?;
    let mut link = [0u8; 64];
    let n = unsafe {
        libc::readlink(format!("/proc/self/fd/{fd}\0").as_ptr().cast(), link.as_mut_ptr().cast(), link.len())
    };
    if n <= 0 || !link[..n as usize].starts_with(b"socket:") {
        return Err(std::io::Error::other("could not find the netfilter queue's socket"));
    }
    let mut delays = std::collections::HashMap::new();
    for &(num, delay) in queues {
        queue.bind(num)?;
        queue.set_copy_range(num, 0)?;
        queue.set_recv_gso(num, true)?;
        queue.set_fail_open(num, false)?;
        queue.set_queue_max_len(num, QUEUE_MAX_LEN)?;
        delays.insert(num, delay);
        eprintln!("orders-netdelay: queue {num}: every packet held {} us", delay.as_micros());
    }
    queue.set_nonblocking(true);
    // Packets waiting, in arrival order, with their release times (a queue's delay is fixed, so
    // the order of arrival is the order of release within a queue; across queues the earliest
    // release is found by looking at each queue's head).
    let mut held: Vec<(u16, VecDeque<(Instant, Message)>)> =
        queues.iter().map(|&(n, _)| (n, VecDeque::new())).collect();
    loop {
        if stop_requested() {
            return Ok(());
        }
        // Take in everything that arrived.
        loop {
            match queue.recv() {
                Ok(msg) => {
                    let now = Instant::now();
                    let num = msg.get_queue_num();
                    let delay = delays.get(&num).copied().unwrap_or_default();
                    if let Some((_, q)) = held.iter_mut().find(|(n, _)| *n == num) {
                        q.push_back((now + delay, msg));
                    } else {
                        let mut msg = msg;
                        msg.set_verdict(Verdict::Accept);
                        queue.verdict(msg)?;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => break,
                Err(e) => return Err(e),
            }
        }
        // Release what is due.
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        for (_, q) in held.iter_mut() {
            while let Some((due, _)) = q.front() {
                if *due <= now {
                    let (_, mut msg) = q.pop_front().unwrap();
                    msg.set_verdict(Verdict::Accept);
                    queue.verdict(msg)?;
                } else {
                    next = Some(next.map_or(*due, |n: Instant| n.min(*due)));
                    break;
                }
            }
        }
        // Sleep until a packet arrives or the next one is due.
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let timeout = next.map(|due| {
            let wait = due.saturating_duration_since(Instant::now());
            libc::timespec { tv_sec: wait.as_secs() as libc::time_t, tv_nsec: wait.subsec_nanos() as libc::c_long }
        });
        let rc = unsafe {
            libc::ppoll(&mut pfd, 1, timeout.as_ref().map_or(std::ptr::null(), |t| t as *const _), std::ptr::null())
        };
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
}
