//! fsopen's mount configurations (Linux's struct fs_context as fsopen,
//! fsconfig and fsmount drive it; process/mount_api.rs): a filesystem
//! type and its parameters, then a new instance (FSCONFIG_CMD_CREATE)
//! that fsmount makes a detached mount of (mount/anon.rs).
//!
//! Invariants:
//! - One configuration per fsopen descriptor (the file's `private`: an
//!   `Arc` the file alone owns, released with the file). Calls reach it
//!   through a reference on the file (process/mount_api.rs `ConfigHold`),
//!   so its release never meets a call. Its state is under its mutex
//!   (Linux's uapi_mutex), which calls hold before the mount table's
//!   lock (fsmount, a reconfiguration); the release, which may run under
//!   the table lock (a drain), takes the state without locking.
//! - `phase` says what a call may do, as Linux's fs_context_phase:
//!   parameters in `CreateParams` and `ReconfParams` only, CMD_CREATE in
//!   `CreateParams`, fsmount in `AwaitingMount`, CMD_RECONFIGURE in
//!   `ReconfParams`; a failed create leaves `Failed`, where everything is
//!   EBUSY. fsmount leaves `AwaitingReconf`, which the next fsconfig turns
//!   into `ReconfParams` with the parameters cleared (vfs_clean_context,
//!   finish_clean_context).
//! - `instance` is set by CMD_CREATE (by fspick, to the picked mount's
//!   instance, with `mounted` set). Until fsmount mounts it, the
//!   configuration is its only owner, and its release tears it down
//!   (`VfsInner::release_mount_config`); once mounted, its mounts do.
//! - Cleaning (fsmount, a reconfiguration) clears the parameters and the
//!   instance flags asked for but not which flags were named
//!   (`sb_flags_mask`), as Linux's vfs_clean_context: a later
//!   reconfiguration sets every flag once named to what the new
//!   parameters say, clear unless named again (a configuration created
//!   "ro" remounts read-write at its first bare CMD_RECONFIGURE).
//! - `log` holds the last `LOG_SLOTS` messages the parameters and
//!   commands logged (Linux's fc_log), each ending in a newline, taken
//!   one per read(2) of the descriptor (`take_message`).

use crate::abi::*;
use crate::fs::{Filesystem, SuperBlock, BLOCK_SIZE};
use crate::sync::atomic::Ordering;
use crate::sync::lock::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

/// Messages a configuration keeps (fc_log's ring): the oldest goes when
/// another comes.
const LOG_SLOTS: usize = 8;

/// A tmpfs instance made with "noswap" (`SuperBlock::tmpfs_options`;
/// shmem_sb_info's noswap), which a reconfiguration checks.
pub(crate) const TMPFS_NOSWAP: u32 = 1 << 0;

/// The filesystem types vfscale makes instances of.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum FsType {
    Tmpfs,
    /// A host directory mirrored (`source` names it).
    Passthrough,
}

impl FsType {
    /// The type's name, which prefixes its parameters' messages.
    pub(crate) fn name(self) -> &'static [u8] {
        match self {
            FsType::Tmpfs => b"tmpfs",
            FsType::Passthrough => b"passthrough",
        }
    }

    /// The type of instance `sb` (a backend-served instance is a
    /// passthrough's).
    pub(crate) fn of_instance(sb: &SuperBlock) -> FsType {
        if sb.backend_served {
            FsType::Passthrough
        } else {
            FsType::Tmpfs
        }
    }

    /// get_fs_type: the type called `name`, if vfscale has it.
    pub(crate) fn of(name: &[u8]) -> Option<FsType> {
        match name {
            b"tmpfs" => Some(FsType::Tmpfs),
            b"passthrough" => Some(FsType::Passthrough),
            _ => None,
        }
    }

    /// A backend of this type; `source` is what a passthrough mirrors
    /// (EINVAL without one, as a block filesystem without a device).
    pub(crate) fn filesystem(self, source: Option<&[u8]>) -> SysResult<Box<dyn Filesystem>> {
        match self {
            FsType::Tmpfs => Ok(Box::new(crate::fs::tmpfs::Tmpfs)),
            FsType::Passthrough => {
                use std::os::unix::ffi::OsStrExt;
                let dir =
                    std::path::Path::new(std::ffi::OsStr::from_bytes(source.ok_or(Errno::EINVAL)?));
                Ok(Box::new(crate::fs::passthrough::Passthrough::new(
                    dir,
                    Default::default(),
                )?))
            }
        }
    }
}

/// Linux's fs_context_phase, as far as fsopen's configurations go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Phase {
    CreateParams,
    AwaitingMount,
    Failed,
    AwaitingReconf,
    ReconfParams,
}

/// What fsconfig gave a parameter (Linux's fs_value_type).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value<'a> {
    Flag,
    String(&'a [u8]),
    /// FSCONFIG_SET_BINARY, SET_PATH(_EMPTY), SET_FD: no parameter here
    /// takes one.
    Other,
}

pub(crate) struct ConfigState {
    pub(crate) fstype: FsType,
    pub(crate) phase: Phase,
    pub(crate) source: Option<Vec<u8>>,
    /// The instance flags asked for (MS_RDONLY, MS_SYNCHRONOUS, ...) and
    /// which of them were named (a reconfiguration changes only those).
    pub(crate) sb_flags: u64,
    pub(crate) sb_flags_mask: u64,
    /// tmpfs's root: mode (permission bits), owner.
    pub(crate) root_mode: u32,
    pub(crate) root_owner: (u32, u32),
    pub(crate) instance: Option<Arc<SuperBlock>>,
    /// fsmount made a mount of `instance`.
    pub(crate) mounted: bool,
    /// tmpfs's "noswap" was given: taken when the instance is made, an
    /// error when a reconfiguration is unless the instance has it
    /// (shmem_reconfigure's "Cannot disable swap on remount").
    pub(crate) noswap: bool,
    /// tmpfs's size limit in pages ("size" and "nr_blocks") and inode
    /// limit as last given (0: none), for the instance made or
    /// reconfigured (`SuperBlock::set_limits`).
    pub(crate) blocks: Option<u64>,
    pub(crate) inodes: Option<u64>,
    log: VecDeque<Vec<u8>>,
}

pub(crate) struct MountConfig {
    pub(crate) state: Mutex<ConfigState>,
}

/// The instance flags fsconfig sets by name (vfs_parse_sb_flag).
const SET_FLAGS: [(&[u8], u64); 5] = [
    (b"dirsync", MS_DIRSYNC),
    (b"lazytime", MS_LAZYTIME),
    (b"mand", MS_MANDLOCK),
    (b"ro", MS_RDONLY),
    (b"sync", MS_SYNCHRONOUS),
];
/// And those it clears by name.
const CLEAR_FLAGS: [(&[u8], u64); 4] = [
    (b"async", MS_SYNCHRONOUS),
    (b"nolazytime", MS_LAZYTIME),
    (b"nomand", MS_MANDLOCK),
    (b"rw", MS_RDONLY),
];

/// tmpfs's BOGO_INODE_SIZE, which bounds nr_inodes.
const BOGO_INODE_SIZE: u64 = 1024;

impl MountConfig {
    /// fspick's: a reconfiguration of instance `sb` (of type `fstype`),
    /// its parameters next.
    pub(crate) fn reconfiguring(fstype: FsType, sb: Arc<SuperBlock>) -> MountConfig {
        let config = MountConfig::new(fstype);
        {
            let mut state = config.state.lock();
            state.phase = Phase::ReconfParams;
            state.instance = Some(sb);
            state.mounted = true;
        }
        config
    }

    /// The configuration of an fsopen or fspick descriptor's file.
    ///
    /// # Safety
    ///
    /// `file` has `FMODE_MOUNT_CONFIG` and the caller holds a reference
    /// on it: such a file owns a reference on its configuration
    /// (`Arc::into_raw`) until its final put.
    pub(crate) unsafe fn of_file(file: &crate::file::OpenFile) -> &MountConfig {
        debug_assert!(file.fmode & crate::file::FMODE_MOUNT_CONFIG != 0);
        // SAFETY: the caller's contract.
        unsafe { &*(file.private as *const MountConfig) }
    }

    /// fscontext_read, as do_loop_readv_writev calls it for each segment:
    /// each segment takes the oldest message if it fits (EMSGSIZE if not,
    /// ENODATA if there is none; an error only when nothing was read
    /// yet), and a message shorter than its segment ends the read. An
    /// empty segment is a read of 0 bytes if it comes first, skipped
    /// after another (the iterator's advance); a vector of empty segments
    /// reads nothing (vfs_readv).
    pub(crate) fn read_messages(&self, bufs: &mut [&mut [u8]]) -> SysResult<usize> {
        if bufs.len() > 1 && bufs.iter().all(|b| b.is_empty()) {
            return Ok(0);
        }
        let mut state = self.state.lock();
        let mut done = 0;
        for (i, buf) in bufs.iter_mut().enumerate() {
            if i > 0 && buf.is_empty() {
                continue;
            }
            match state.take_message(buf.len()) {
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
                Ok(m) => {
                    buf[..m.len()].copy_from_slice(&m);
                    done += m.len();
                    if m.len() < buf.len() {
                        break;
                    }
                }
            }
        }
        Ok(done)
    }

    pub(crate) fn new(fstype: FsType) -> MountConfig {
        MountConfig {
            state: Mutex::new(ConfigState {
                fstype,
                phase: Phase::CreateParams,
                source: None,
                sb_flags: 0,
                sb_flags_mask: 0,
                root_mode: 0o1777,
                root_owner: (0, 0),
                instance: None,
                mounted: false,
                noswap: false,
                blocks: None,
                inodes: None,
                log: VecDeque::new(),
            }),
        }
    }
}

/// The instance flags mount(2)'s flags carry (its MS_* superblock bits).
const MOUNT_SB_FLAGS: u64 = MS_RDONLY | MS_SYNCHRONOUS | MS_MANDLOCK | MS_DIRSYNC | MS_LAZYTIME;
/// Those a remount changes (MS_RMT_MASK but MS_I_VERSION, which vfscale
/// does not name).
pub(crate) const REMOUNT_FLAGS: u64 = MS_RDONLY | MS_SYNCHRONOUS | MS_MANDLOCK | MS_LAZYTIME;

impl ConfigState {
    /// fs_context_for_mount: mount(2)'s configuration of a new instance,
    /// its flags `flags`' instance bits, its options next.
    pub(crate) fn new_mount(fstype: FsType, flags: u64) -> ConfigState {
        let mut state = MountConfig::new(fstype).state.into_inner();
        state.sb_flags = flags & MOUNT_SB_FLAGS;
        state
    }

    /// fs_context_for_reconfigure: mount(2)'s remount of instance `sb`,
    /// every flag a remount changes named (`flags` sets them), its
    /// options next.
    pub(crate) fn remount(fstype: FsType, sb: Arc<SuperBlock>, flags: u64) -> ConfigState {
        let mut state = MountConfig::reconfiguring(fstype, sb).state.into_inner();
        state.sb_flags = flags & REMOUNT_FLAGS;
        state.sb_flags_mask = REMOUNT_FLAGS;
        state
    }

    /// finish_clean_context: after fsmount (or a reconfiguration) the next
    /// call starts a reconfiguration, its parameters cleared (not the
    /// flags' mask: module doc).
    pub(crate) fn finish_clean(&mut self) {
        if self.phase == Phase::AwaitingReconf {
            self.source = None;
            self.sb_flags = 0;
            self.noswap = false;
            self.blocks = None;
            self.inodes = None;
            self.root_mode = 0o1777;
            self.root_owner = (0, 0);
            self.phase = Phase::ReconfParams;
        }
    }

    /// logfc at level 'e': `parts` as one message, after the type's name
    /// when `prefixed` (errorfc, invalfc; else errorf, invalf).
    pub(crate) fn log_error(&mut self, prefixed: bool, parts: &[&[u8]]) {
        let mut message = b"e ".to_vec();
        if prefixed {
            message.extend_from_slice(self.fstype.name());
            message.extend_from_slice(b": ");
        }
        parts.iter().for_each(|p| message.extend_from_slice(p));
        message.push(b'\n');
        if self.log.len() == LOG_SLOTS {
            self.log.pop_front();
        }
        self.log.push_back(message);
    }

    /// invalfc: the message, and the EINVAL that goes with it.
    fn invalid(&mut self, prefixed: bool, parts: &[&[u8]]) -> Errno {
        self.log_error(prefixed, parts);
        Errno::EINVAL
    }

    /// fs_param_bad_value.
    fn bad_value(&mut self, key: &[u8]) -> Errno {
        self.invalid(true, &[b"Bad value for '", key, b"'"])
    }

    /// fetch_message_locked: the oldest message if a buffer of `len`
    /// bytes takes it (EMSGSIZE, keeping it, if not; ENODATA if none).
    pub(crate) fn take_message(&mut self, len: usize) -> SysResult<Vec<u8>> {
        match self.log.front() {
            None => Err(Errno::ENODATA),
            Some(m) if m.len() > len => Err(Errno::EMSGSIZE),
            Some(_) => Ok(self.log.pop_front().expect("a message")),
        }
    }

    /// shmem_reconfigure's checks of tmpfs instance `sb` against the
    /// parameters, in its order, before anything changes. The inode
    /// check counts inodes (Linux counts their xattrs' space too).
    pub(crate) fn check_tmpfs_reconfigure(&mut self, sb: &SuperBlock) -> SysResult<()> {
        use crate::fs::UNLIMITED;
        if self.fstype != FsType::Tmpfs {
            return Ok(());
        }
        let (max_pages, max_inodes) = sb.limits();
        // Relaxed: changed only under the mount table's lock, which the
        // caller holds.
        let noswap = sb.tmpfs_options.load(Ordering::Relaxed) & TMPFS_NOSWAP != 0;
        let over = |used: &crate::sync::counter::ApproxCounter, n: u64| {
            used.compare(i64::try_from(n).unwrap_or(UNLIMITED)).is_gt()
        };
        let refused: &[u8] = match (self.blocks, self.inodes) {
            (Some(1..), _) if max_pages == UNLIMITED => b"Cannot retroactively limit size",
            (Some(n @ 1..), _) if over(&sb.used_blocks, n) => b"Too small a size for current use",
            (_, Some(1..)) if max_inodes == UNLIMITED => b"Cannot retroactively limit inodes",
            (_, Some(n @ 1..)) if over(&sb.used_inodes, n) => b"Too few inodes for current use",
            _ if self.noswap && !noswap => b"Cannot disable swap on remount",
            _ => return Ok(()),
        };
        Err(self.invalid(true, &[refused]))
    }

    /// What a tmpfs instance keeps after it is made or reconfigured with
    /// these parameters: its limits, and its options
    /// (`SuperBlock::tmpfs_options`: noswap, only ever added).
    pub(crate) fn apply_tmpfs(&self, sb: &SuperBlock) {
        sb.set_limits(self.blocks, self.inodes);
        if self.noswap {
            // Relaxed: as in `check_tmpfs_reconfigure`.
            sb.tmpfs_options.fetch_or(TMPFS_NOSWAP, Ordering::Relaxed);
        }
    }

    /// vfs_parse_fs_param: an instance flag by name (any value), then the
    /// type's own parameters, then "source" (a string, once). EBUSY
    /// outside the parameter phases; EINVAL for anything else, with
    /// Linux's message.
    pub(crate) fn parse(&mut self, key: &[u8], value: Value<'_>) -> SysResult<()> {
        if !matches!(self.phase, Phase::CreateParams | Phase::ReconfParams) {
            return Err(Errno::EBUSY);
        }
        if let Some(&(_, bit)) = SET_FLAGS.iter().find(|(k, _)| *k == key) {
            self.sb_flags |= bit;
            self.sb_flags_mask |= bit;
            return Ok(());
        }
        if let Some(&(_, bit)) = CLEAR_FLAGS.iter().find(|(k, _)| *k == key) {
            self.sb_flags &= !bit;
            self.sb_flags_mask |= bit;
            return Ok(());
        }
        if self.fstype == FsType::Tmpfs {
            if let Some(r) = self.parse_tmpfs(key, value) {
                return r;
            }
        }
        if key == b"source" {
            return match value {
                Value::String(_) if self.source.is_some() => {
                    Err(self.invalid(false, &[b"Multiple sources"]))
                }
                Value::String(s) => {
                    self.source = Some(s.to_vec());
                    Ok(())
                }
                _ => Err(self.invalid(false, &[b"Non-string source"])),
            };
        }
        Err(self.invalid(true, &[b"Unknown parameter '", key, b"'"]))
    }

    /// parse_monolithic_mount_data: mount(2)'s `data`, options separated
    /// by commas, each `key=value` (a string) or `key` (a flag); empty
    /// ones and ones with an empty key are skipped. tmpfs splits only at
    /// a comma not followed by a digit (shmem_next_opt: mpol's node lists
    /// hold commas). Read up to a NUL and at most 4,095 bytes. The first
    /// refusal ends it.
    pub(crate) fn parse_monolithic(&mut self, data: &[u8]) -> SysResult<()> {
        let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
        let mut rest = &data[..end.min(4095)];
        while !rest.is_empty() {
            let split = (0..rest.len()).find(|&i| {
                rest[i] == b','
                    && (self.fstype != FsType::Tmpfs
                        || !rest.get(i + 1).is_some_and(u8::is_ascii_digit))
            });
            let (option, next) = match split {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &[][..]),
            };
            rest = next;
            match option.iter().position(|&b| b == b'=') {
                _ if option.is_empty() => {}
                Some(0) => {}
                Some(i) => self.parse(&option[..i], Value::String(&option[i + 1..]))?,
                None => self.parse(option, Value::Flag)?,
            }
        }
        Ok(())
    }

    /// shmem_parse_one for the parameters vfscale has (None: not one of
    /// tmpfs's), with its messages. mode, uid and gid set the root of the
    /// instance made; the size and inode limits, huge, inode32/64 and
    /// noswap are checked as Linux checks them and change nothing but
    /// what a reconfiguration checks (the instance's limits are
    /// `VfsConfig::tmpfs_limits`).
    fn parse_tmpfs(&mut self, key: &[u8], value: Value<'_>) -> Option<SysResult<()>> {
        let string = match value {
            Value::String(s) => Some(s),
            _ => None,
        };
        let flag = matches!(value, Value::Flag);
        Some(match key {
            b"mode" => match string.and_then(|s| parse_uint(s, 8)) {
                Some(m) => {
                    self.root_mode = m & 0o7777;
                    Ok(())
                }
                None => Err(self.bad_value(key)),
            },
            b"uid" | b"gid" => match string.and_then(|s| parse_uint(s, 0)) {
                // make_kuid: (uid_t)-1 is no id.
                Some(u32::MAX) => {
                    let what: &[u8] = if key == b"uid" { b"uid" } else { b"gid" };
                    let s = string.unwrap_or_default();
                    Err(self.invalid(true, &[b"Invalid ", what, b" '", s, b"'"]))
                }
                Some(id) => {
                    if key == b"uid" {
                        self.root_owner.0 = id;
                    } else {
                        self.root_owner.1 = id;
                    }
                    Ok(())
                }
                // fs_param_is_uid logs what fs_param_is_u32 logged again.
                None => {
                    self.bad_value(key);
                    Err(self.bad_value(key))
                }
            },
            b"size" => match string.and_then(memparse) {
                Some((n, rest @ (b"" | b"%"))) => {
                    // shmem_parse_one's arithmetic, wrapping as its u64s.
                    let bytes = if rest.is_empty() {
                        n
                    } else {
                        (n << 12).wrapping_mul(totalram_pages()) / 100
                    };
                    self.blocks = Some(bytes.wrapping_add(BLOCK_SIZE - 1) / BLOCK_SIZE);
                    Ok(())
                }
                _ => Err(self.bad_value(key)),
            },
            b"nr_blocks" => match string.and_then(memparse) {
                Some((n, b"")) if n <= i64::MAX as u64 => {
                    self.blocks = Some(n);
                    Ok(())
                }
                _ => Err(self.bad_value(key)),
            },
            b"nr_inodes" => match string.and_then(memparse) {
                Some((n, b"")) if n <= u64::MAX / BOGO_INODE_SIZE => {
                    self.inodes = Some(n);
                    Ok(())
                }
                _ => Err(self.bad_value(key)),
            },
            b"huge" => match string {
                Some(b"never" | b"always" | b"within_size" | b"advise") => Ok(()),
                _ => Err(self.bad_value(key)),
            },
            // No NUMA policy is built: every value is refused.
            b"mpol" => Err(self.bad_value(key)),
            // A kernel without CONFIG_UNICODE (the 6.18 host's), message
            // and its doubled newline included; a non-string casefold
            // value is the string parameter's bad value.
            b"casefold" if !flag && string.is_none() => Err(self.bad_value(key)),
            b"strict_encoding" if !flag => {
                Err(self.invalid(true, &[b"Unexpected value for '", key, b"'"]))
            }
            b"casefold" | b"strict_encoding" => {
                Err(self.invalid(true, &[b"tmpfs: Kernel not built with CONFIG_UNICODE\n"]))
            }
            b"inode32" | b"inode64" if flag => Ok(()),
            b"noswap" if flag => {
                self.noswap = true;
                Ok(())
            }
            b"inode32" | b"inode64" | b"noswap" => {
                Err(self.invalid(true, &[b"Unexpected value for '", key, b"'"]))
            }
            _ => return None,
        })
    }
}

/// totalram_pages(): the host's memory in pages (what a tmpfs "size" in
/// percent is of).
fn totalram_pages() -> u64 {
    // SAFETY: sysinfo writes only into the struct we pass; all-zero bytes
    // are a valid value of it.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return 0;
    }
    (info.totalram as u64).saturating_mul(info.mem_unit as u64) / BLOCK_SIZE
}

/// kstrtouint: an unsigned number in `base` (0: by its prefix, 0x hex, 0
/// octal), a leading `+` allowed, one trailing newline allowed; None for
/// anything else or a value past u32.
fn parse_uint(s: &[u8], base: u32) -> Option<u32> {
    let s = s.strip_suffix(b"\n").unwrap_or(s);
    let s = s.strip_prefix(b"+").unwrap_or(s);
    let (digits, radix) = match base {
        0 if s.len() > 2 && (s.starts_with(b"0x") || s.starts_with(b"0X")) => (&s[2..], 16),
        0 if s.len() > 1 && s[0] == b'0' => (&s[1..], 8),
        0 => (s, 10),
        b => (s, b),
    };
    if digits.is_empty() {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(digits).ok()?, radix).ok()
}

/// memparse: a number as simple_strtoull reads it (base by prefix; no
/// digits is 0), then an optional K, M, G, T, P or E (either case) that
/// multiplies by 1024 per step; returns it and what follows. None for an
/// empty string (fs_param_is_string refuses one).
fn memparse(s: &[u8]) -> Option<(u64, &[u8])> {
    if s.is_empty() {
        return None;
    }
    // _parse_integer_fixup_radix: hex only when a hex digit follows 0x.
    let hex =
        s.len() > 2 && (s.starts_with(b"0x") || s.starts_with(b"0X")) && s[2].is_ascii_hexdigit();
    let (radix, start) = if hex {
        (16, 2)
    } else if s.len() > 1 && s[0] == b'0' {
        (8, 1)
    } else {
        (10, 0)
    };
    let mut n: u64 = 0;
    let mut at = start;
    while let Some(d) = s.get(at).and_then(|&c| (c as char).to_digit(radix)) {
        n = n.wrapping_mul(u64::from(radix)).wrapping_add(u64::from(d));
        at += 1;
    }
    let shift = match s.get(at).map(u8::to_ascii_uppercase) {
        Some(b'K') => 10,
        Some(b'M') => 20,
        Some(b'G') => 30,
        Some(b'T') => 40,
        Some(b'P') => 50,
        Some(b'E') => 60,
        _ => 0,
    };
    if shift != 0 {
        at += 1;
    }
    Some((n.wrapping_shl(shift), &s[at..]))
}

impl crate::vfs::VfsInner {
    /// The release of an fsopen descriptor's configuration (its file's
    /// final put, the configuration's only owner: no call holds its
    /// mutex, `ConfigHold`): an instance it made and fsmount never mounted
    /// goes with it (nothing else can reach it).
    pub(crate) fn release_mount_config(&self, config: Arc<MountConfig>) {
        let Some(config) = Arc::into_inner(config) else {
            debug_assert!(false, "a mount configuration owned by its file alone");
            return;
        };
        let state = config.state.into_inner();
        if let (Some(sb), false) = (&state.instance, state.mounted) {
            self.kill_superblock(sb);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn numbers_parse_as_linux_parses_them() {
        assert_eq!(parse_uint(b"755", 8), Some(0o755));
        assert_eq!(parse_uint(b"0755", 8), Some(0o755));
        assert_eq!(parse_uint(b"789", 8), None);
        assert_eq!(parse_uint(b"1000\n", 0), Some(1000));
        assert_eq!(parse_uint(b"0x10", 0), Some(16));
        assert_eq!(parse_uint(b"010", 0), Some(8));
        assert_eq!(parse_uint(b"+7", 10), Some(7));
        assert_eq!(parse_uint(b"", 10), None);
        assert_eq!(parse_uint(b"4294967296", 10), None);
        assert_eq!(parse_uint(b"1 ", 10), None);
        assert_eq!(memparse(b"1k"), Some((1024, &b""[..])));
        assert_eq!(memparse(b"2M"), Some((2 << 20, &b""[..])));
        assert_eq!(memparse(b"50%"), Some((50, &b"%"[..])));
        assert_eq!(memparse(b"1KB"), Some((1024, &b"B"[..])));
        assert_eq!(memparse(b"x"), Some((0, &b"x"[..])));
        assert_eq!(memparse(b"0x10"), Some((16, &b""[..])));
        // "0xK" is octal 0 followed by "xK", not hex nothing kibibytes.
        assert_eq!(memparse(b"0xK"), Some((0, &b"xK"[..])));
        assert_eq!(memparse(b""), None);
    }

    #[test]
    fn parameters_follow_the_phase() {
        let c = MountConfig::new(FsType::Tmpfs);
        let mut s = c.state.lock();
        s.parse(b"ro", Value::Flag).unwrap();
        s.parse(b"mode", Value::String(b"700")).unwrap();
        s.parse(b"uid", Value::String(b"1000")).unwrap();
        assert_eq!(
            (s.sb_flags & MS_RDONLY, s.root_mode, s.root_owner),
            (MS_RDONLY, 0o700, (1000, 0))
        );
        assert_eq!(s.parse(b"mode", Value::Flag), Err(Errno::EINVAL));
        assert_eq!(s.parse(b"inode64", Value::String(b"1")), Err(Errno::EINVAL));
        assert_eq!(
            s.parse(b"uid", Value::String(b"4294967295")),
            Err(Errno::EINVAL)
        );
        assert_eq!(s.parse(b"bogus", Value::Flag), Err(Errno::EINVAL));
        s.parse(b"source", Value::String(b"x")).unwrap();
        assert_eq!(s.parse(b"source", Value::String(b"y")), Err(Errno::EINVAL));
        s.phase = Phase::AwaitingMount;
        assert_eq!(s.parse(b"ro", Value::Flag), Err(Errno::EBUSY));
        s.phase = Phase::AwaitingReconf;
        s.finish_clean();
        assert_eq!(
            (s.phase, s.sb_flags, s.source.is_none()),
            (Phase::ReconfParams, 0, true)
        );
        s.parse(b"noswap", Value::Flag).unwrap();
        assert!(s.noswap);
        s.parse(b"rw", Value::Flag).unwrap();
        assert_eq!(s.sb_flags_mask, MS_RDONLY);
    }

    #[test]
    fn monolithic_options_split_as_linux_splits_them() {
        let parsed = |fstype, data: &[u8]| {
            let mut s = ConfigState::new_mount(fstype, 0);
            let r = s.parse_monolithic(data);
            (r, s.blocks, s.root_mode, s.sb_flags)
        };
        // Empty options and empty keys skipped; the last value wins.
        assert_eq!(
            parsed(FsType::Tmpfs, b",,size=8k,,=x,ro,size=4k"),
            (Ok(()), Some(1), 0o1777, MS_RDONLY)
        );
        // tmpfs keeps a comma before a digit in the option (mpol's node
        // lists); other types split there.
        assert_eq!(parsed(FsType::Tmpfs, b"size=1k,5").0, Err(Errno::EINVAL));
        assert_eq!(parsed(FsType::Passthrough, b"ro,5").0, Err(Errno::EINVAL));
        assert_eq!(parsed(FsType::Passthrough, b"ro,sync").0, Ok(()));
        // Up to a NUL, and 4,095 bytes.
        assert_eq!(parsed(FsType::Tmpfs, b"mode=700\0bogus").2, 0o700);
        let mut long = b"mode=700,".to_vec();
        long.resize(4095, b',');
        long.extend_from_slice(b"bogus");
        assert_eq!(parsed(FsType::Tmpfs, &long), (Ok(()), None, 0o700, 0));
        long.truncate(4094);
        long.push(b'x');
        assert_eq!(parsed(FsType::Tmpfs, &long).0, Err(Errno::EINVAL));
    }

    /// The messages the refusals above logged, in order.
    fn logged(c: &MountConfig) -> Vec<String> {
        let mut out = Vec::new();
        let mut buf = [0u8; 128];
        while let Ok(n) = c.read_messages(&mut [&mut buf[..]]) {
            out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        out
    }

    #[test]
    fn refusals_log_linux_messages() {
        let c = MountConfig::new(FsType::Tmpfs);
        {
            let mut s = c.state.lock();
            let _ = s.parse(b"bogus", Value::Flag);
            let _ = s.parse(b"uid", Value::Flag);
            let _ = s.parse(b"gid", Value::String(b"4294967295"));
            let _ = s.parse(b"noswap", Value::Other);
            let _ = s.parse(b"source", Value::Flag);
            s.parse(b"ro", Value::Other).unwrap();
        }
        assert_eq!(
            logged(&c),
            [
                "e tmpfs: Unknown parameter 'bogus'\n",
                "e tmpfs: Bad value for 'uid'\n",
                "e tmpfs: Bad value for 'uid'\n",
                "e tmpfs: Invalid gid '4294967295'\n",
                "e tmpfs: Unexpected value for 'noswap'\n",
                "e Non-string source\n",
            ]
        );
        assert_eq!(
            c.read_messages(&mut [&mut [0u8; 64][..]]),
            Err(Errno::ENODATA)
        );
    }

    #[test]
    fn the_log_keeps_eight_and_reads_one_per_segment() {
        let c = MountConfig::new(FsType::Passthrough);
        {
            let mut s = c.state.lock();
            for k in b'0'..=b'9' {
                assert_eq!(s.parse(&[b'k', k], Value::Flag), Err(Errno::EINVAL));
            }
        }
        let one = "e passthrough: Unknown parameter 'k2'\n".len();
        // Too small (a read of 0 too): the message stays.
        let mut small = [0u8; 8];
        assert_eq!(c.read_messages(&mut [&mut small[..]]), Err(Errno::EMSGSIZE));
        assert_eq!(c.read_messages(&mut [&mut [][..]]), Err(Errno::EMSGSIZE));
        // Exactly filled segments go on; a short message ends the read.
        let (mut a, mut b, mut d) = (vec![0u8; one], vec![0u8; one], vec![0u8; 100]);
        let n = c.read_messages(&mut [&mut a[..], &mut [][..], &mut b[..], &mut d[..]]);
        assert_eq!(n, Ok(3 * one));
        assert_eq!(
            (&a[..], &b[..], &d[..one]),
            (
                &b"e passthrough: Unknown parameter 'k2'\n"[..],
                &b"e passthrough: Unknown parameter 'k3'\n"[..],
                &b"e passthrough: Unknown parameter 'k4'\n"[..],
            )
        );
        // A vector of empty segments reads nothing; a leading empty one is
        // a read of 0.
        assert_eq!(c.read_messages(&mut [&mut [][..], &mut [][..]]), Ok(0));
        assert_eq!(
            c.read_messages(&mut [&mut [][..], &mut d[..]]),
            Err(Errno::EMSGSIZE)
        );
        assert_eq!(logged(&c).len(), 5);
        let mut e = d.clone();
        assert_eq!(
            c.read_messages(&mut [&mut d[..], &mut e[..]]),
            Err(Errno::ENODATA)
        );
    }
}
