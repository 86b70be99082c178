//! When a message arrived, as the kernel saw it: the socket's software receive timestamp
//! (`SO_TIMESTAMPING`), which a `recvmsg` returns with the bytes.
//!
//! An open loop's worker that woke for every echo paid a sleep and a wake-up per message,
//! most of what a paced message cost. With the arrival time in the completion, the ring's
//! worker may leave echoes queued until its next send falls due and still time each one to
//! its arrival, not to when the worker got round to it. The kernel stamps a packet as it
//! enters the stack (`CLOCK_REALTIME`); [`Clocks`] turns that into an `Instant` by its age
//! at one reading of both clocks. A TCP read that spans several packets carries the last
//! one's stamp, so a message that arrived in an earlier packet of the same read is timed a
//! little late, never early. On epoll the worker wakes for each read anyway; it reads with
//! `recvmsg` ([`recv`]) so that an open loop's latency ends at the same point on either
//! backend.

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Control bytes a receive needs room for: one `SCM_TIMESTAMPING` message (three
/// timespecs; the first is the software stamp). `CMSG_SPACE` of that.
pub const CONTROL_BYTES: usize = align(size_of::<libc::cmsghdr>()) + align(size_of::<[libc::timespec; 3]>());

/// A stamp older than this at the reading is taken for a step of the wall clock (the
/// kernel stamps with it), not for an age: the message is timed at the reading instead.
const MAX_AGE: Duration = Duration::from_secs(60);

const fn align(len: usize) -> usize {
    let word = size_of::<usize>();
    len.div_ceil(word) * word
}

/// Asks the kernel to stamp what arrives on `fd` and to report the stamps with the bytes.
pub fn enable(fd: RawFd) -> io::Result<()> {
    let flags = (libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE) as libc::c_int;
    // SAFETY: a plain setsockopt on a descriptor the caller owns, with an int-sized value.
    let done = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPING,
            (&flags as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if done == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// A `recv` into `buf` from the nonblocking socket `fd` that also returns the bytes' arrival
/// stamp (wall clock), if the socket stamps what arrives ([`enable`]).
pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
    let mut control = [0u64; CONTROL_BYTES / 8];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: an all-zero msghdr is valid; its pointers are set to live buffers below.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_iov = &mut iov;
    header.msg_iovlen = 1;
    header.msg_control = control.as_mut_ptr().cast();
    header.msg_controllen = CONTROL_BYTES as _;
    // SAFETY: the iovec and the control buffer outlive the call and have the lengths given.
    let n = unsafe { libc::recvmsg(fd, &mut header, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let control_len = (header.msg_controllen as usize).min(CONTROL_BYTES);
    // SAFETY: `control` is CONTROL_BYTES of initialised memory.
    let control = unsafe { std::slice::from_raw_parts(control.as_ptr().cast::<u8>(), control_len) };
    Ok((n as usize, stamp(control)))
}

/// The software receive stamp (wall-clock time since the Unix epoch) in a receive's control
/// bytes, if there is one.
pub fn stamp(control: &[u8]) -> Option<Duration> {
    let header = size_of::<libc::cmsghdr>();
    let mut at = 0;
    while control.len() >= at + header {
        // SAFETY: `header` bytes are there; read unaligned, since the buffer is bytes.
        let cmsg = unsafe { control.as_ptr().add(at).cast::<libc::cmsghdr>().read_unaligned() };
        let len = cmsg.cmsg_len;
        if len < header || at + len > control.len() {
            return None;
        }
        let data = &control[at + align(header)..at + len];
        if cmsg.cmsg_level == libc::SOL_SOCKET
            && cmsg.cmsg_type == libc::SCM_TIMESTAMPING
            && data.len() >= size_of::<libc::timespec>()
        {
            // SAFETY: a timespec's bytes are there (checked); unaligned read.
            let software = unsafe { data.as_ptr().cast::<libc::timespec>().read_unaligned() };
            if software.tv_sec <= 0 && software.tv_nsec <= 0 {
                return None;
            }
            let nanos = u32::try_from(software.tv_nsec).ok().filter(|&n| n < 1_000_000_000)?;
            return Some(Duration::new(u64::try_from(software.tv_sec).ok()?, nanos));
        }
        at += align(len);
    }
    None
}

/// The `msghdr` a ring's multishot `recvmsg` is armed with: only its lengths count (no
/// name; room for the stamp's control message). The kernel reads it as each receive is
/// submitted, so the ring keeps it as long as it lives.
pub struct RecvMsgHeader(Box<libc::msghdr>);

// SAFETY: the header's pointers are null (the kernel uses only its lengths): plain data.
unsafe impl Send for RecvMsgHeader {}

impl RecvMsgHeader {
    pub fn new() -> RecvMsgHeader {
        // SAFETY: an all-zero msghdr is valid (null pointers, zero lengths).
        let mut header: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        header.msg_controllen = CONTROL_BYTES as _;
        RecvMsgHeader(header)
    }

    pub fn get(&self) -> &libc::msghdr {
        &self.0
    }
}

/// Both clocks, read once together, to date the stamps of one wait's completions.
#[derive(Debug, Clone, Copy)]
pub struct Clocks {
    monotonic: Instant,
    wall: Duration,
}

impl Clocks {
    pub fn now() -> Clocks {
        let monotonic = Instant::now();
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes one timespec into `ts`.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        let wall = Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32);
        Clocks { monotonic, wall }
    }

    /// The instant of a wall-clock `stamp`: the reading less the stamp's age. A stamp after
    /// the reading (the two clocks were not read at the same nanosecond) or implausibly old
    /// gives the reading itself.
    pub fn instant_of(&self, stamp: Duration) -> Instant {
        match self.wall.checked_sub(stamp) {
            Some(age) if age <= MAX_AGE => self.monotonic.checked_sub(age).unwrap_or(self.monotonic),
            _ => self.monotonic,
        }
    }
}

/// For tests: a stamping socket pair, returned once the kernel stamps packets (it turns
/// stamping on a moment after the first socket asks, and off after the last one closes):
/// while it is held, stamping stays on.
#[cfg(test)]
pub fn stamping_on() -> (std::net::TcpStream, std::net::TcpStream) {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let receiver = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let mut sender = listener.accept().unwrap().0;
    enable(receiver.as_raw_fd()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = [0u8; 8];
    loop {
        sender.write_all(b"?").unwrap();
        let (_, stamp) = recv(receiver.as_raw_fd(), &mut buf).unwrap();
        if stamp.is_some() {
            return (receiver, sender);
        }
        assert!(Instant::now() < deadline, "the kernel never stamped a received packet");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control_with(level: i32, kind: i32, software: libc::timespec) -> Vec<u8> {
        let mut bytes = vec![0u8; CONTROL_BYTES];
        let cmsg = libc::cmsghdr {
            cmsg_len: (align(size_of::<libc::cmsghdr>()) + size_of::<[libc::timespec; 3]>()) as _,
            cmsg_level: level,
            cmsg_type: kind,
        };
        // SAFETY: both writes fit in CONTROL_BYTES (checked by the lengths above).
        unsafe {
            bytes.as_mut_ptr().cast::<libc::cmsghdr>().write_unaligned(cmsg);
            bytes
                .as_mut_ptr()
                .add(align(size_of::<libc::cmsghdr>()))
                .cast::<libc::timespec>()
                .write_unaligned(software);
        }
        bytes
    }

    #[test]
    fn the_software_stamp_is_read_from_its_control_message() {
        let ts = libc::timespec { tv_sec: 1_700_000_000, tv_nsec: 123_456_789 };
        let control = control_with(libc::SOL_SOCKET, libc::SCM_TIMESTAMPING, ts);
        assert_eq!(stamp(&control), Some(Duration::new(1_700_000_000, 123_456_789)));
        assert_eq!(CONTROL_BYTES, 64, "CMSG_SPACE of three timespecs on a 64-bit machine");
    }

    #[test]
    fn other_messages_short_control_and_empty_stamps_give_none() {
        let ts = libc::timespec { tv_sec: 5, tv_nsec: 0 };
        assert_eq!(stamp(&control_with(libc::SOL_SOCKET, libc::SCM_RIGHTS, ts)), None);
        assert_eq!(stamp(&control_with(libc::IPPROTO_TCP, libc::SCM_TIMESTAMPING, ts)), None);
        assert_eq!(stamp(&control_with(libc::SOL_SOCKET, libc::SCM_TIMESTAMPING, ts)[..20]), None);
        assert_eq!(stamp(&[]), None);
        let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        assert_eq!(stamp(&control_with(libc::SOL_SOCKET, libc::SCM_TIMESTAMPING, zero)), None);
    }

    #[test]
    fn a_stamped_socket_returns_its_bytes_with_their_arrival() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let _on = stamping_on();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let mut server = listener.accept().unwrap().0;
        enable(client.as_raw_fd()).unwrap();
        let before = Instant::now();
        server.write_all(b"echo").unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let mut buf = [0u8; 16];
        let (n, stamp) = recv(client.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"echo");
        let arrived = Clocks::now().instant_of(stamp.expect("the bytes came with their stamp"));
        let slack = Duration::from_millis(2);
        assert!(
            arrived + slack >= before && arrived < before + Duration::from_millis(25),
            "{:?}",
            arrived - before
        );
        // Without stamping, the same call returns the bytes and no stamp.
        let plain = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let mut peer = listener.accept().unwrap().0;
        peer.write_all(b"x").unwrap();
        let (n, stamp) = recv(plain.as_raw_fd(), &mut buf).unwrap();
        assert_eq!((&buf[..n], stamp), (&b"x"[..], None));
    }

    #[test]
    fn a_stamp_is_dated_by_its_age_and_an_implausible_one_by_the_reading() {
        let clocks = Clocks::now();
        let earlier = clocks.wall - Duration::from_micros(250);
        assert_eq!(clocks.instant_of(earlier), clocks.monotonic - Duration::from_micros(250));
        assert_eq!(clocks.instant_of(clocks.wall + Duration::from_micros(3)), clocks.monotonic);
        assert_eq!(clocks.instant_of(clocks.wall - Duration::from_secs(3600)), clocks.monotonic);
    }
}
