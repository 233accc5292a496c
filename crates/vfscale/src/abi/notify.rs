//! inotify(7)'s constants and its `struct inotify_event` byte layout.
//!
//! A read of an inotify file returns whole records: a 16-byte header
//! (`wd: i32, mask: u32, cookie: u32, len: u32`, native endian) followed by
//! `len` bytes of name, NUL-terminated and NUL-padded so that `len` is a
//! multiple of the header's size (Linux's `round_up(name_len + 1, 16)`);
//! `len` is 0 for an event about the watched object itself.

// Events a watch can ask for (and a read reports).
pub const IN_ACCESS: u32 = 0x0000_0001;
pub const IN_MODIFY: u32 = 0x0000_0002;
pub const IN_ATTRIB: u32 = 0x0000_0004;
pub const IN_CLOSE_WRITE: u32 = 0x0000_0008;
pub const IN_CLOSE_NOWRITE: u32 = 0x0000_0010;
pub const IN_OPEN: u32 = 0x0000_0020;
pub const IN_MOVED_FROM: u32 = 0x0000_0040;
pub const IN_MOVED_TO: u32 = 0x0000_0080;
pub const IN_CREATE: u32 = 0x0000_0100;
pub const IN_DELETE: u32 = 0x0000_0200;
pub const IN_DELETE_SELF: u32 = 0x0000_0400;
pub const IN_MOVE_SELF: u32 = 0x0000_0800;
pub const IN_CLOSE: u32 = IN_CLOSE_WRITE | IN_CLOSE_NOWRITE;
pub const IN_MOVE: u32 = IN_MOVED_FROM | IN_MOVED_TO;
pub const IN_ALL_EVENTS: u32 = 0x0000_0fff;

// Bits only a read reports.
/// The filesystem holding the watched object went away.
pub const IN_UNMOUNT: u32 = 0x0000_2000;
/// Events were lost (wd -1): the queue held `max_queued_events`.
pub const IN_Q_OVERFLOW: u32 = 0x0000_4000;
/// The watch is gone (removed, or its object deleted or unmounted).
pub const IN_IGNORED: u32 = 0x0000_8000;
/// The subject of the event is a directory.
pub const IN_ISDIR: u32 = 0x4000_0000;

// Flags of inotify_add_watch's mask.
pub const IN_ONLYDIR: u32 = 0x0100_0000;
pub const IN_DONT_FOLLOW: u32 = 0x0200_0000;
/// No events for children once they are unlinked (open files still write).
pub const IN_EXCL_UNLINK: u32 = 0x0400_0000;
/// Fail with EEXIST if the object is already watched by this instance.
pub const IN_MASK_CREATE: u32 = 0x1000_0000;
/// Add to the existing watch's mask instead of replacing it.
pub const IN_MASK_ADD: u32 = 0x2000_0000;
/// Remove the watch after its first event.
pub const IN_ONESHOT: u32 = 0x8000_0000;

// inotify_init1(2).
pub const IN_NONBLOCK: i32 = 0o4000;
pub const IN_CLOEXEC: i32 = 0o2000000;

/// The bytes of a `struct inotify_event` before its name.
pub const INOTIFY_EVENT_HEADER: usize = 16;

/// Linux's default `/proc/sys/fs/inotify/max_queued_events`: beyond it an
/// instance drops events and queues one IN_Q_OVERFLOW.
pub const INOTIFY_MAX_QUEUED_EVENTS: usize = 16_384;
/// Linux's default `/proc/sys/fs/inotify/max_user_watches` is at least
/// 8,192 (scaled with memory); vfscale's limit per instance.
pub const INOTIFY_MAX_WATCHES: usize = 65_536;

/// One decoded `struct inotify_event`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InotifyEvent {
    pub wd: i32,
    pub mask: u32,
    pub cookie: u32,
    /// The name without its NUL padding (empty for the object itself).
    pub name: Vec<u8>,
}

impl InotifyEvent {
    /// The bytes this event takes in a read.
    pub fn record_len(name_len: usize) -> usize {
        INOTIFY_EVENT_HEADER + padded_name_len(name_len)
    }

    /// Appends the record to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let len = padded_name_len(self.name.len());
        out.extend_from_slice(&self.wd.to_ne_bytes());
        out.extend_from_slice(&self.mask.to_ne_bytes());
        out.extend_from_slice(&self.cookie.to_ne_bytes());
        out.extend_from_slice(&(len as u32).to_ne_bytes());
        out.extend_from_slice(&self.name);
        out.resize(out.len() + len - self.name.len(), 0);
    }

    /// Decodes the records of one read; None if `buf` does not hold whole
    /// records.
    pub fn parse_all(mut buf: &[u8]) -> Option<Vec<InotifyEvent>> {
        let mut out = Vec::new();
        while !buf.is_empty() {
            let field = |i: usize| -> Option<[u8; 4]> { buf.get(i..i + 4)?.try_into().ok() };
            let wd = i32::from_ne_bytes(field(0)?);
            let mask = u32::from_ne_bytes(field(4)?);
            let cookie = u32::from_ne_bytes(field(8)?);
            let len = u32::from_ne_bytes(field(12)?) as usize;
            let name = buf.get(INOTIFY_EVENT_HEADER..INOTIFY_EVENT_HEADER.checked_add(len)?)?;
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            out.push(InotifyEvent {
                wd,
                mask,
                cookie,
                name: name[..end].to_vec(),
            });
            buf = &buf[INOTIFY_EVENT_HEADER + len..];
        }
        Some(out)
    }
}

/// A name's bytes in a record: with at least one NUL, rounded up to the
/// header's size; 0 for no name.
fn padded_name_len(name_len: usize) -> usize {
    if name_len == 0 {
        0
    } else {
        (name_len + 1).next_multiple_of(INOTIFY_EVENT_HEADER)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_the_host() {
        for (ours, host) in [
            (IN_ACCESS, libc::IN_ACCESS),
            (IN_MODIFY, libc::IN_MODIFY),
            (IN_ATTRIB, libc::IN_ATTRIB),
            (IN_CLOSE_WRITE, libc::IN_CLOSE_WRITE),
            (IN_CLOSE_NOWRITE, libc::IN_CLOSE_NOWRITE),
            (IN_OPEN, libc::IN_OPEN),
            (IN_MOVED_FROM, libc::IN_MOVED_FROM),
            (IN_MOVED_TO, libc::IN_MOVED_TO),
            (IN_CREATE, libc::IN_CREATE),
            (IN_DELETE, libc::IN_DELETE),
            (IN_DELETE_SELF, libc::IN_DELETE_SELF),
            (IN_MOVE_SELF, libc::IN_MOVE_SELF),
            (IN_ALL_EVENTS, libc::IN_ALL_EVENTS),
            (IN_UNMOUNT, libc::IN_UNMOUNT),
            (IN_Q_OVERFLOW, libc::IN_Q_OVERFLOW),
            (IN_IGNORED, libc::IN_IGNORED),
            (IN_ISDIR, libc::IN_ISDIR),
            (IN_ONLYDIR, libc::IN_ONLYDIR),
            (IN_DONT_FOLLOW, libc::IN_DONT_FOLLOW),
            (IN_EXCL_UNLINK, libc::IN_EXCL_UNLINK),
            (IN_MASK_CREATE, libc::IN_MASK_CREATE),
            (IN_MASK_ADD, libc::IN_MASK_ADD),
            (IN_ONESHOT, libc::IN_ONESHOT),
        ] {
            assert_eq!(ours, host);
        }
        assert_eq!(IN_NONBLOCK, libc::IN_NONBLOCK);
        assert_eq!(IN_CLOEXEC, libc::IN_CLOEXEC);
        assert_eq!(
            INOTIFY_EVENT_HEADER,
            core::mem::size_of::<libc::inotify_event>()
        );
    }

    #[test]
    fn records_round_trip_with_linux_padding() {
        let events = vec![
            InotifyEvent {
                wd: 1,
                mask: IN_CREATE,
                cookie: 0,
                name: b"a".to_vec(),
            },
            InotifyEvent {
                wd: 2,
                mask: IN_DELETE_SELF,
                cookie: 0,
                name: Vec::new(),
            },
            InotifyEvent {
                wd: -1,
                mask: IN_MOVED_TO,
                cookie: 7,
                name: b"fifteen_bytes__".to_vec(),
            },
            InotifyEvent {
                wd: 3,
                mask: IN_OPEN,
                cookie: 0,
                name: b"sixteen_bytes___".to_vec(),
            },
        ];
        let mut buf = Vec::new();
        for e in &events {
            e.encode_into(&mut buf);
        }
        // 1 → 16, 0 → 0, 15 → 16, 16 → 32 bytes of name.
        assert_eq!(buf.len(), 16 * 4 + 16 + 16 + 32);
        assert_eq!(
            InotifyEvent::record_len(16),
            INOTIFY_EVENT_HEADER + 32,
            "a 16-byte name needs a NUL, so a second block"
        );
        assert_eq!(InotifyEvent::parse_all(&buf), Some(events));
        assert_eq!(InotifyEvent::parse_all(&buf[..20]), None);
    }
}
