//! Regression tests for the differences the kernel differential test
//! (`vfscale-difftest/tests/kernel_diff.rs`, issue 9) found once its
//! sequences covered xattrs, fallocate, copy_file_range, syncfs, file
//! handles, fcntl, poll and the anonymous objects. One test per bug; every
//! expected value is what Linux 6.18 answered on tmpfs in that test (the
//! minimal failing sequence is the body of each test).

mod common;
use common::*;

/// Linux's AF_INET (vfscale has no Internet sockets).
const INET: i32 = 2;

#[test]
fn setxattr_checks_flags_name_and_size_before_the_walk() {
    let (_vfs, p) = setup();
    // setxattr_copy runs before the path is looked up.
    assert_eq!(p.setxattr(b"/nope", b"user.a", b"", 4), Err(Errno::EINVAL));
    assert_eq!(p.setxattr(b"/nope", b"", b"", 0), Err(Errno::ERANGE));
    let big = vec![0u8; XATTR_SIZE_MAX + 1];
    assert_eq!(p.setxattr(b"/nope", b"user.a", &big, 0), Err(Errno::E2BIG));
    assert_eq!(p.getxattr(b"/nope", b"", &mut []), Err(Errno::ERANGE));
    assert_eq!(p.removexattr(b"/nope", b""), Err(Errno::ERANGE));
    // fremovexattr too imports the name before looking at the fd.
    let long = [b"user.".as_slice(), &[b'x'; 251]].concat();
    assert_eq!(p.fremovexattr(-1, &long), Err(Errno::ERANGE));
}

#[test]
fn fsetxattr_and_fgetxattr_of_at_fdcwd_name_the_working_directory() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    p.chdir(b"/d").unwrap();
    assert_eq!(p.fsetxattr(AT_FDCWD, b"user.a", b"v", 0), Ok(()));
    let mut buf = [0u8; 8];
    assert_eq!(p.fgetxattr(AT_FDCWD, b"user.a", &mut buf), Ok(1));
    assert_eq!(p.getxattr(b"/d", b"user.a", &mut buf), Ok(1));
    // flistxattr and fremovexattr look the fd up as a file.
    assert_eq!(p.flistxattr(AT_FDCWD, &mut buf), Err(Errno::EBADF));
    assert_eq!(p.fremovexattr(AT_FDCWD, b"user.a"), Err(Errno::EBADF));
    assert_eq!(p.fsetxattr(-1, b"user.a", b"v", 0), Err(Errno::EBADF));
}

#[test]
fn xattr_permission_comes_before_the_namespace_lookup() {
    let (vfs, p) = setup();
    p.mkdir(b"/d", 0o777).unwrap();
    mkfile(&p, b"/d/f", b"");
    p.chmod(b"/d/f", 0o444).unwrap();
    p.symlink(b"f", b"/d/l").unwrap();
    let u = user(&vfs, 1000, 1000);
    // "user." on a symlink: xattr_permission's EPERM, not the handler's
    // EINVAL.
    assert_eq!(u.lsetxattr(b"/d/l", b"user.", b"", 0), Err(Errno::EPERM));
    // system.*: no permission check from the VFS, then no handler.
    assert_eq!(
        u.setxattr(b"/d/f", b"system.x", b"", 0),
        Err(Errno::EOPNOTSUPP)
    );
    // An unknown prefix is checked against the mode first.
    assert_eq!(u.setxattr(b"/d/f", b"bogus", b"", 0), Err(Errno::EACCES));
}

#[test]
fn pipes_sockets_and_eventfds_store_no_xattrs() {
    let (vfs, p) = setup();
    let [r, _w] = p.pipe2(O_NONBLOCK).unwrap();
    assert_eq!(
        p.fsetxattr(r, b"trusted.t", b"v", 0),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(p.flistxattr(r, &mut []), Ok(0));
    // user.* on a non-regular file: xattr_permission.
    assert_eq!(p.fsetxattr(r, b"user.a", b"v", 0), Err(Errno::EPERM));
    assert_eq!(p.fgetxattr(r, b"user.a", &mut []), Err(Errno::ENODATA));
    let [s, _t] = p
        .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
        .unwrap();
    let mut list = [0u8; 64];
    assert_eq!(p.flistxattr(s, &mut list), Ok(21));
    assert_eq!(&list[..21], b"system.sockprotoname\0");
    assert_eq!(p.flistxattr(s, &mut list[..4]), Err(Errno::ERANGE));
    let mut name = [0u8; 32];
    assert_eq!(p.fgetxattr(s, b"system.sockprotoname", &mut name), Ok(12));
    assert_eq!(&name[..12], b"UNIX-STREAM\0");
    // sockfs's security handler leaves the work to an LSM: none here.
    assert_eq!(p.fremovexattr(s, b"security.s"), Err(Errno::EAGAIN));
    assert_eq!(
        p.fsetxattr(s, b"security.s", b"", 0),
        Err(Errno::EOPNOTSUPP)
    );
    // The eventfd inode is S_PRIVATE: no capability check of security.*.
    let u = user(&vfs, 1000, 1000);
    let e = u.eventfd(0, EFD_NONBLOCK).unwrap();
    assert_eq!(
        u.fsetxattr(e, b"security.s", b"", 0),
        Err(Errno::EOPNOTSUPP)
    );
}

#[test]
fn fstatfs_of_anonymous_objects_names_their_pseudo_filesystem() {
    let (_vfs, p) = setup();
    let [r, _w] = p.pipe2(O_NONBLOCK).unwrap();
    let [s, _t] = p.socketpair(AF_UNIX, SOCK_DGRAM, 0).unwrap();
    let e = p.eventfd(0, EFD_NONBLOCK).unwrap();
    let m = p.memfd_create(b"m", 0).unwrap();
    assert_eq!(p.fstatfs(r).unwrap().f_type, 0x5049_5045);
    assert_eq!(p.fstatfs(s).unwrap().f_type, 0x534f_434b);
    assert_eq!(p.fstatfs(e).unwrap().f_type, 0x0904_1934);
    assert_eq!(p.fstatfs(m).unwrap().f_type, TMPFS_MAGIC);
}

#[test]
fn eventfd_attributes_cannot_be_changed() {
    let (vfs, p) = setup();
    let u = user(&vfs, 1001, 100);
    let e = u.eventfd(0, EFD_NONBLOCK).unwrap();
    // anon_inode_setattr: EOPNOTSUPP, ahead of the ownership checks.
    assert_eq!(u.fchown(e, 0, 0), Err(Errno::EOPNOTSUPP));
    assert_eq!(u.fchmod(e, 0o644), Err(Errno::EOPNOTSUPP));
    assert_eq!(
        u.futimens(e, Some([Timespec::new(1, 0), Timespec::OMIT])),
        Err(Errno::EOPNOTSUPP)
    );
    let e2 = p.eventfd(0, EFD_NONBLOCK).unwrap();
    assert_eq!(p.fchmod(e2, 0o644), Err(Errno::EOPNOTSUPP));
}

#[test]
fn eventfd_io_is_exactly_one_counter_and_seeks_nowhere() {
    let (_vfs, p) = setup();
    let e = p.eventfd(0, EFD_NONBLOCK).unwrap();
    assert_eq!(p.write(e, b"aaaaaaaaa"), Err(Errno::EINVAL));
    assert_eq!(p.write(e, &[]), Err(Errno::EINVAL));
    // writev: one write per segment (the file has a plain write).
    let one = 1u64.to_ne_bytes();
    assert_eq!(p.writev(e, &[&one, &one]), Ok(16));
    // readv: the counter spread over the segments (read_iter).
    let (mut a, mut b) = ([0u8; 3], [0u8; 5]);
    assert_eq!(p.readv(e, &mut [&mut a, &mut b]), Ok(8));
    assert_eq!([a.as_slice(), &b].concat(), 2u64.to_ne_bytes());
    // noop_llseek: the position, whatever the request.
    assert_eq!(p.lseek(e, 100, SEEK_SET), Ok(0));
    assert_eq!(p.lseek(e, 0, SEEK_HOLE), Ok(0));
}

#[test]
fn socket_details_match_linux() {
    let (_vfs, p) = setup();
    // Internet families exist on Linux but cannot pair.
    assert_eq!(p.socketpair(INET, SOCK_STREAM, 0), Err(Errno::EOPNOTSUPP));
    // AF_UNIX takes SOCK_RAW as SOCK_DGRAM.
    let [a, b] = p.socketpair(AF_UNIX, 3 | SOCK_NONBLOCK, 0).unwrap();
    assert_eq!(p.write(a, b"xy"), Ok(2));
    let mut buf = [0u8; 1];
    assert_eq!(p.read(b, &mut buf), Ok(1), "a datagram, truncated");
    assert_eq!(p.read(b, &mut buf), Err(Errno::EAGAIN));
    // A zero-length read of a socket is 0, even when nothing is queued.
    assert_eq!(p.read(b, &mut []), Ok(0));
}

#[test]
fn fcntl_status_flags_match_linux() {
    let (vfs, p) = setup();
    p.mkdir(b"/d", 0o777).unwrap();
    let d = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(
        p.fcntl(d, F_GETFL, 0),
        Ok((O_LARGEFILE | O_DIRECTORY) as i64)
    );
    let o = p.open(b"/d", O_PATH | O_RDWR | O_NOFOLLOW, 0).unwrap();
    assert_eq!(p.fcntl(o, F_GETFL, 0), Ok((O_PATH | O_NOFOLLOW) as i64));
    // O_PATH descriptors allow only a few commands.
    assert_eq!(p.fcntl(o, F_SETFL, 0), Err(Errno::EBADF));
    assert_eq!(p.fcntl(o, 1234, 0), Err(Errno::EBADF));
    // The descriptor is looked up before the command.
    assert_eq!(p.fcntl(-1, 1234, 0), Err(Errno::EBADF));
    assert_eq!(p.fcntl(d, 1234, 0), Err(Errno::EINVAL));
    // F_SETFL: O_NOATIME for the owner only, O_DIRECT where possible.
    mkfile(&p, b"/d/f", b"");
    let u = user(&vfs, 1000, 1000);
    let f = u.open(b"/d/f", O_RDONLY, 0).unwrap();
    assert_eq!(u.fcntl(f, F_SETFL, O_NOATIME as i64), Err(Errno::EPERM));
    assert_eq!(p.fcntl(d, F_SETFL, O_DIRECT as i64), Err(Errno::EINVAL));
    let g = p.open(b"/d/f", O_RDONLY, 0).unwrap();
    assert_eq!(p.fcntl(g, F_SETFL, (O_DIRECT | O_NOATIME) as i64), Ok(0));
    // A memfd's file has no FMODE_CAN_ODIRECT.
    let m = p.memfd_create(b"m", 0).unwrap();
    assert_eq!(p.fcntl(m, F_SETFL, O_DIRECT as i64), Err(Errno::EINVAL));
}

#[test]
fn o_path_descriptors_are_not_files_for_poll_and_syncfs() {
    let (_vfs, p) = setup();
    let o = p.open(b"/", O_PATH, 0).unwrap();
    let mut fds = [PollFd {
        fd: o,
        events: POLLIN,
        revents: 0,
    }];
    assert_eq!(p.poll(&mut fds, 0), Ok(1));
    assert_eq!(fds[0].revents, POLLNVAL);
    assert_eq!(p.syncfs(o), Err(Errno::EBADF));
}

#[test]
fn copy_file_range_checks_in_linux_order() {
    let (_vfs, p) = setup();
    p.mkdir(b"/d", 0o755).unwrap();
    mkfile(&p, b"/f", b"data");
    let d = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    let r = p.open(b"/f", O_RDONLY, 0).unwrap();
    // Types (EISDIR) before access modes (EBADF).
    assert_eq!(
        p.copy_file_range(d, None, d, None, 0, 0),
        Err(Errno::EISDIR)
    );
    // Descriptors before flags.
    assert_eq!(
        p.copy_file_range(-1, None, r, None, 1, 1),
        Err(Errno::EBADF)
    );
    assert_eq!(
        p.copy_file_range(r, None, r, None, 1, 1),
        Err(Errno::EINVAL)
    );
    // Another instance: EXDEV (tmpfs has no cross-instance copy).
    let m = p.memfd_create(b"m", 0).unwrap();
    assert_eq!(p.copy_file_range(r, None, m, None, 4, 0), Err(Errno::EXDEV));
}

#[test]
fn fallocate_checks_in_linux_order_and_clears_set_id_bits() {
    let (vfs, p) = setup();
    assert_eq!(p.fallocate(-1, 0, 0, 0), Err(Errno::EBADF));
    p.mkdir(b"/d", 0o777).unwrap();
    p.chmod(b"/d", 0o777).unwrap();
    let d = p.open(b"/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
    // ZERO_RANGE is a valid mode for the VFS: the access mode answers,
    // not tmpfs's EOPNOTSUPP.
    assert_eq!(p.fallocate(d, 0x10, 0, 1), Err(Errno::EBADF));
    let u = user(&vfs, 1001, 100);
    let f = u.open(b"/d/c", O_CREAT | O_RDWR, 0o4755).unwrap();
    assert_eq!(u.fstat(f).unwrap().mode & 0o7777, 0o4755);
    assert_eq!(u.fallocate(f, 0x10, 0, 1), Err(Errno::EOPNOTSUPP));
    assert_eq!(u.fallocate(f, 0, 0, 1), Ok(()));
    assert_eq!(u.fstat(f).unwrap().mode & 0o7777, 0o755);
}

#[test]
fn fallocated_pages_are_holes_until_written() {
    let (_vfs, p) = setup();
    let f = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.fallocate(f, 0, 0, 6).unwrap();
    assert_eq!(p.lseek(f, 0, SEEK_DATA), Err(Errno::ENXIO));
    assert_eq!(p.lseek(f, 0, SEEK_HOLE), Ok(0));
    assert_eq!(p.fstat(f).unwrap().blocks, 8);
    p.pwrite(f, b"x", 2).unwrap();
    assert_eq!(p.lseek(f, 0, SEEK_DATA), Ok(0));
    assert_eq!(p.lseek(f, 0, SEEK_HOLE), Ok(6));
    // A second fallocate over an unwritten page makes it data.
    let g = p.open(b"/g", O_CREAT | O_RDWR, 0o644).unwrap();
    p.fallocate(g, 0, 0, 1).unwrap();
    assert_eq!(p.lseek(g, 0, SEEK_DATA), Err(Errno::ENXIO));
    p.fallocate(g, 0, 0, 4096).unwrap();
    assert_eq!(p.lseek(g, 0, SEEK_DATA), Ok(0));
}

#[test]
fn truncating_to_the_same_size_frees_preallocated_pages() {
    let (_vfs, p) = setup();
    let f = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.fallocate(f, FALLOC_FL_KEEP_SIZE, 0, 1).unwrap();
    assert_eq!(p.fstat(f).unwrap().blocks, 8);
    p.ftruncate(f, 0).unwrap();
    assert_eq!(p.fstat(f).unwrap().blocks, 0);
}

#[test]
fn an_impossible_fallocate_is_enospc_without_allocating() {
    let (_vfs, p) = setup();
    let f = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    // Before the fix this allocated pages until the host ran out.
    assert_eq!(p.fallocate(f, 0, 0, i64::MAX), Err(Errno::ENOSPC));
    assert_eq!(p.fstat(f).unwrap().blocks, 0);
}

#[test]
fn file_handle_checks_in_linux_order() {
    let (_vfs, p) = setup();
    let mut h = FileHandle::with_capacity(MAX_HANDLE_SZ + 1);
    // The buffer size is read after the walk.
    assert_eq!(
        p.name_to_handle_at(AT_FDCWD, b"/nope", &mut h, 0),
        Err(Errno::ENOENT)
    );
    // Linux 6.12+ flags: a unique mount id (accepted), a connectable
    // handle (tmpfs cannot decode parents: EOPNOTSUPP; EINVAL with
    // AT_EMPTY_PATH).
    let mut h = FileHandle::with_capacity(MAX_HANDLE_SZ);
    assert!(p.name_to_handle_at(AT_FDCWD, b"/", &mut h, 0x1).is_ok());
    assert_eq!(
        p.name_to_handle_at(AT_FDCWD, b"/", &mut h, 0x2),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(
        p.name_to_handle_at(AT_FDCWD, b"", &mut h, 0x2 | AT_EMPTY_PATH),
        Err(Errno::EINVAL)
    );
    // open_by_handle_at: the handle's header before the mount fd.
    assert_eq!(
        p.open_by_handle_at(-1, &FileHandle::with_capacity(0), 0),
        Err(Errno::EINVAL)
    );
    // The mount fd is taken with fdget: O_PATH is EBADF.
    assert!(p.name_to_handle_at(AT_FDCWD, b"/", &mut h, 0).is_ok());
    let o = p.open(b"/", O_PATH, 0).unwrap();
    assert_eq!(p.open_by_handle_at(o, &h, O_RDONLY), Err(Errno::EBADF));
    let d = p.open(b"/", O_RDONLY, 0).unwrap();
    assert!(p.open_by_handle_at(d, &h, O_RDONLY).is_ok());
    // A symlink's handle: ELOOP before O_DIRECTORY's ENOTDIR.
    p.symlink(b"x", b"/l").unwrap();
    let mut hl = FileHandle::with_capacity(MAX_HANDLE_SZ);
    p.name_to_handle_at(AT_FDCWD, b"/l", &mut hl, 0).unwrap();
    assert_eq!(
        p.open_by_handle_at(d, &hl, O_RDONLY | O_DIRECTORY),
        Err(Errno::ELOOP)
    );
    assert!(p.open_by_handle_at(d, &hl, O_PATH).is_ok());
}

#[test]
fn fd_path_outside_the_root_is_spelled_from_the_top() {
    let (_vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/a/l", 0o755).unwrap();
    let fd = p.open(b"/a", O_RDONLY | O_DIRECTORY, 0).unwrap();
    p.chroot(b"/a/l").unwrap();
    // d_path, unlike getcwd, adds no "(unreachable)".
    assert_eq!(p.fd_path(fd).unwrap(), b"/a");
    assert_eq!(p.getcwd().unwrap(), b"(unreachable)/");
}

#[test]
fn an_empty_write_to_a_stream_socket_whose_peer_closed_is_epipe() {
    let (_vfs, p) = setup();
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
        .unwrap();
    assert_eq!(p.write(b, b""), Ok(0));
    p.close(a).unwrap();
    assert_eq!(p.write(b, b""), Err(Errno::EPIPE));
}

#[test]
fn an_empty_write_to_a_pipe_without_readers_succeeds() {
    let (_vfs, p) = setup();
    let [r, w] = p.pipe2(O_NONBLOCK).unwrap();
    p.close(r).unwrap();
    // pipe_write: "Null write succeeds" before the readers are counted.
    assert_eq!(p.write(w, b""), Ok(0));
    assert_eq!(p.write(w, b"x"), Err(Errno::EPIPE));
}

#[test]
fn anonymous_objects_have_no_file_handles() {
    let (_vfs, p) = setup();
    let [r, _w] = p.pipe2(O_NONBLOCK).unwrap();
    let mut h = FileHandle::with_capacity(MAX_HANDLE_SZ);
    // pipefs has no export operations (vfscale said ENOENT).
    assert_eq!(
        p.name_to_handle_at(r, b"", &mut h, AT_EMPTY_PATH),
        Err(Errno::EOPNOTSUPP)
    );
}

#[test]
fn a_datagram_socket_is_disconnected_by_its_first_send_to_a_closed_peer() {
    let (_vfs, p) = setup();
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0)
        .unwrap();
    p.close(a).unwrap();
    // unix_dgram_sendmsg: ECONNREFUSED once, then the peer is dropped.
    assert_eq!(p.write(b, b""), Err(Errno::ECONNREFUSED));
    assert_eq!(p.write(b, b"x"), Err(Errno::ENOTCONN));
}

#[test]
fn punching_past_eof_frees_preallocated_pages() {
    let (_vfs, p) = setup();
    let f = p.open(b"/f", O_CREAT | O_RDWR, 0o644).unwrap();
    p.fallocate(f, FALLOC_FL_KEEP_SIZE, 4095, 2).unwrap();
    assert_eq!(p.fstat(f).unwrap().blocks, 16);
    p.fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096)
        .unwrap();
    assert_eq!(p.fstat(f).unwrap().blocks, 8);
}

#[test]
fn a_seqpacket_send_reports_the_pending_reset_first() {
    let (_vfs, p) = setup();
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0)
        .unwrap();
    assert_eq!(p.write(b, b"a"), Ok(1));
    // a closes with b's packet unread: b gets a pending ECONNRESET.
    p.close(a).unwrap();
    assert_eq!(p.write(b, b""), Err(Errno::ECONNRESET));
    assert_eq!(p.write(b, b""), Err(Errno::EPIPE));
}

/// Found by the kernel differential test (session 17): a seqpacket
/// receive reports a pending reset before the messages still queued, as
/// a datagram receive does; a stream read takes its bytes first.
#[test]
fn a_seqpacket_receive_reports_the_pending_reset_before_queued_messages() {
    let (_vfs, p) = setup();
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0)
        .unwrap();
    assert_eq!(p.write(a, b"to b"), Ok(4));
    assert_eq!(p.write(b, b"to a"), Ok(4));
    // a closes with b's packet unread: b gets a pending ECONNRESET.
    p.close(a).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(p.read(b, &mut buf), Err(Errno::ECONNRESET));
    assert_eq!(p.read(b, &mut buf), Ok(4));
    assert_eq!(&buf[..4], b"to b");
    assert_eq!(p.read(b, &mut buf), Ok(0));
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
        .unwrap();
    assert_eq!(p.write(a, b"to b"), Ok(4));
    assert_eq!(p.write(b, b"to a"), Ok(4));
    p.close(a).unwrap();
    assert_eq!(p.read(b, &mut buf), Ok(4));
    assert_eq!(p.read(b, &mut buf), Err(Errno::ECONNRESET));
    assert_eq!(p.read(b, &mut buf), Ok(0));
}

/// Found by the kernel differential test (session 17): a receive that
/// finds no data (the end of file) gives no sender name, even where the
/// peer had one (unix_copy_addr runs on a received message only).
#[test]
fn a_receive_at_end_of_file_names_no_sender() {
    let (_vfs, p) = setup();
    for ty in [SOCK_SEQPACKET, SOCK_STREAM] {
        let [a, b] = p.socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0).unwrap();
        p.bind(b, b"\0named-peer").unwrap();
        assert_eq!(p.write(b, b"m"), Ok(1));
        let mut buf = [0u8; 4];
        assert_eq!(
            p.recvfrom(a, &mut buf, 0),
            Ok((1, b"\0named-peer".to_vec()))
        );
        p.close(b).unwrap();
        assert_eq!(p.recvfrom(a, &mut buf, 0), Ok((0, Vec::new())), "type {ty}");
        p.close(a).unwrap();
    }
}

/// Found by the model differential test (session 14): an appending write
/// at tmpfs's size limit. Expected values: Linux 6.18 on /dev/shm.
#[test]
fn an_append_at_the_size_limit_is_efbig_and_one_crossing_it_is_cut() {
    let (_vfs, p) = setup();
    let max = i64::MAX;
    let fd = p.open(b"/f", O_CREAT | O_RDWR | O_APPEND, 0o644).unwrap();
    p.ftruncate(fd, max).unwrap();
    // The offset of a pwrite passes rw_verify_area; the append position
    // (the size) is at the limit.
    assert_eq!(p.pwrite(fd, b"adecb", 37), Err(Errno::EFBIG));
    assert_eq!(p.write(fd, b"adecb"), Err(Errno::EFBIG));
    assert_eq!(
        p.write(fd, b""),
        Ok(0),
        "a null write before the limit test"
    );
    // rw_verify_area still judges the pwrite's own range first.
    assert_eq!(p.pwrite(fd, b"adecb", max - 1), Err(Errno::EINVAL));
    // Two bytes below the limit: the write is cut to two.
    p.ftruncate(fd, max - 2).unwrap();
    assert_eq!(p.pwrite(fd, b"adecb", 37), Ok(2));
    assert_eq!(p.fstat(fd).unwrap().size, max);
    p.ftruncate(fd, max - 5).unwrap();
    assert_eq!(p.writev(fd, &[b"ab", b"cde", b"fg"]), Ok(5));
}

/// Found by the kernel differential test once it generated shutdown(2)
/// (session 14). Expected values: Linux 6.18.
#[test]
fn datagram_shutdowns_answer_as_unix_dgram_does() {
    let (_vfs, p) = setup();
    // A non-blocking read of an empty datagram socket is EAGAIN even
    // after SHUT_RD (only a blocking wait ends at the shutdown).
    let [a, _b] = p
        .socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0)
        .unwrap();
    p.shutdown(a, SHUT_RD).unwrap();
    assert_eq!(p.read(a, &mut [0u8; 1]), Err(Errno::EAGAIN));
    // An unconnected datagram socket shut for sending: EPIPE before
    // ENOTCONN; a stream socket asks for its peer first.
    let d = p.socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0).unwrap();
    p.shutdown(d, SHUT_WR).unwrap();
    assert_eq!(p.write(d, b"a"), Err(Errno::EPIPE));
    let s = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    p.shutdown(s, SHUT_WR).unwrap();
    assert_eq!(p.write(s, b"a"), Err(Errno::ENOTCONN));
    // A shut-down unconnected socket shows it in poll.
    let mut pfd = [PollFd {
        fd: s,
        events: POLLIN | POLLOUT,
        revents: 0,
    }];
    p.shutdown(s, SHUT_RD).unwrap();
    p.poll(&mut pfd, 0).unwrap();
    assert_eq!(pfd[0].revents, POLLIN | POLLOUT | POLLHUP);
    // A datagram socket whose send found its peer gone drops the peer.
    let [c, e] = p
        .socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0)
        .unwrap();
    p.close(e).unwrap();
    assert_eq!(p.write(c, b"x"), Err(Errno::ECONNREFUSED));
    assert_eq!(p.getpeername(c), Err(Errno::ENOTCONN));
}

#[test]
fn getpeername_reads_the_peers_name_now() {
    let (_vfs, p) = setup();
    // A pair's ends have no names; binding one names it for the other's
    // getpeername and recvfrom (Linux reads the peer's address at the
    // call, session 15).
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)
        .unwrap();
    assert_eq!(p.getpeername(b), Ok(Vec::new()));
    p.bind(a, b"\0vfscale-kd-a").unwrap();
    assert_eq!(p.getpeername(b), Ok(b"\0vfscale-kd-a".to_vec()));
    assert_eq!(p.write(a, b"x"), Ok(1));
    let mut buf = [0u8; 4];
    assert_eq!(
        p.recvfrom(b, &mut buf, 0),
        Ok((1, b"\0vfscale-kd-a".to_vec()))
    );
    // A client that binds after it connected: the accepted side sees it.
    let l = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    p.bind(l, b"/srv").unwrap();
    p.listen(l, 1).unwrap();
    let c = p.socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0).unwrap();
    p.connect(c, b"/srv").unwrap();
    let s = p.accept4(l, 0).unwrap();
    assert_eq!(p.getpeername(s), Ok(Vec::new()));
    p.bind(c, b"/cli").unwrap();
    assert_eq!(p.getpeername(s), Ok(b"/cli".to_vec()));
    assert_eq!(p.getpeername(c), Ok(b"/srv".to_vec()));
}

#[test]
fn a_lone_empty_unread_message_resets_nothing() {
    // Linux's release takes a first empty message for a consumed
    // out-of-band marker: closing a seqpacket end that holds only one
    // empty message unread is no reset for its peer (EPIPE), any other
    // unread content is (ECONNRESET) — session 15, after messages began
    // to cost their truesize.
    let (_vfs, p) = setup();
    let cases: [(&[&[u8]], Errno); 4] = [
        (&[b""], Errno::EPIPE),
        (&[b"", b""], Errno::ECONNRESET),
        (&[b"", b"x"], Errno::ECONNRESET),
        (&[b"x"], Errno::ECONNRESET),
    ];
    for (msgs, want) in cases {
        let [a, b] = p
            .socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0)
            .unwrap();
        for m in msgs {
            assert_eq!(p.write(a, m), Ok(m.len()));
        }
        p.close(b).unwrap();
        assert_eq!(p.write(a, b"d"), Err(want), "{msgs:?}");
        p.close(a).unwrap();
    }
}

#[test]
fn rename_checks_the_old_name_before_a_removed_new_directory() {
    // lookup_one_qstr_excl looks the old name up (its length checked by
    // the filesystem's lookup) before the new one, whose removed
    // directory is ENOENT — session 18 (vfscale said ENOENT for both).
    let (_vfs, p) = setup();
    p.mkdir(b"/a", 0o755).unwrap();
    p.mkdir(b"/b", 0o755).unwrap();
    let b = p.open(b"/b", O_DIRECTORY, 0).unwrap();
    p.rmdir(b"/b").unwrap();
    let long = [b"/a/".as_slice(), &[b'x'; 256]].concat();
    assert_eq!(
        p.renameat2(AT_FDCWD, &long, b, b"c", 0),
        Err(Errno::ENAMETOOLONG)
    );
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/a/y", b, b"c", 0),
        Err(Errno::ENOENT)
    );
    p.close(p.open(b"/a/y", O_CREAT | O_WRONLY, 0o644).unwrap())
        .unwrap();
    assert_eq!(
        p.renameat2(AT_FDCWD, b"/a/y", b, b"c", 0),
        Err(Errno::ENOENT)
    );
    let long_new = [b'x'; 256];
    assert_eq!(
        p.renameat2(
            AT_FDCWD,
            b"/a/y",
            AT_FDCWD,
            &[b"/a/".as_slice(), &long_new].concat(),
            0
        ),
        Err(Errno::ENAMETOOLONG)
    );
}

/// Found by `epoll_kernel.rs`'s random sequences once they set SO_SNDBUF
/// (session 33): unix_seqpacket_sendmsg reports a pending error before
/// unix_dgram_sendmsg looks at the message's size.
#[test]
fn a_seqpacket_send_reports_a_pending_reset_before_emsgsize() {
    let (_vfs, p) = setup();
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0)
        .unwrap();
    p.write(a, b"unread").unwrap();
    // b closes with a message unread: a's next send says ECONNRESET.
    p.close(b).unwrap();
    p.setsockopt(a, SOL_SOCKET, SO_SNDBUF, &2048i32.to_ne_bytes())
        .unwrap();
    assert_eq!(p.write(a, &[0u8; 70_000]), Err(Errno::ECONNRESET));
    // The error was cleared: now the size.
    assert_eq!(p.write(a, &[0u8; 70_000]), Err(Errno::EMSGSIZE));
    p.close(a).unwrap();
}

/// Checked on the host with the previous test (session 33): MSG_OOB is
/// unix_dgram_sendmsg's check, after unix_seqpacket_sendmsg's pending
/// error and connection state.
#[test]
fn a_seqpacket_send_reports_a_pending_reset_and_enotconn_before_msg_oob() {
    let (_vfs, p) = setup();
    let [a, b] = p
        .socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0)
        .unwrap();
    p.write(a, b"unread").unwrap();
    p.close(b).unwrap();
    assert_eq!(
        p.sendmsg(a, &[b"x"], MSG_OOB, None, &[], None),
        Err(Errno::ECONNRESET)
    );
    assert_eq!(
        p.sendmsg(a, &[b"x"], MSG_OOB, None, &[], None),
        Err(Errno::EOPNOTSUPP)
    );
    let s = p.socket(AF_UNIX, SOCK_SEQPACKET, 0).unwrap();
    assert_eq!(
        p.sendmsg(s, &[b"x"], MSG_OOB, None, &[], None),
        Err(Errno::ENOTCONN)
    );
    for fd in [a, s] {
        p.close(fd).unwrap();
    }
}

/// statx of an eventfd (and of a pipe and a socket) through AT_EMPTY_PATH
/// asking for no field: the pseudo filesystems have no multigrain
/// timestamps, so mtime and ctime come anyway, and no birth time even
/// when asked (found by `kernel_diff.rs` session 35, seed
/// 1796078146403991821: the kernel's basic mask was 0x7ff, vfscale's
/// 0x73f). A memfd is tmpfs's: mtime and ctime only when asked.
#[test]
fn statx_of_pseudo_files_reports_their_times_and_no_birth_time() {
    let (_vfs, p) = setup();
    let e = p.eventfd(0, 0).unwrap();
    let [r, _w] = p.pipe2(0).unwrap();
    let s = p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap();
    for fd in [e, r, s] {
        for mask in [0, STATX_BASIC_STATS | STATX_BTIME] {
            let sx = p
                .statx(fd, b"", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, mask)
                .unwrap();
            assert_eq!(sx.mask, STATX_BASIC_STATS, "fd {fd}, mask {mask:#x}");
        }
    }
    let m = p.memfd_create(b"m", 0).unwrap();
    let sx = p.statx(m, b"", AT_EMPTY_PATH, 0).unwrap();
    assert_eq!(sx.mask, STATX_BASIC_STATS & !(STATX_MTIME | STATX_CTIME));
}
