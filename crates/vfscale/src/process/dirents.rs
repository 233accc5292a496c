//! getdents64: directory listing from the child index, by cookie.
//!
//! Runs under the directory lock shared: listings proceed in parallel with
//! each other and with lookups, and write no per-directory state per entry
//! (only the file's own position, once per call).

use super::io::touch_atime;
use super::Process;
use crate::abi::*;
use crate::dir::index::FIRST_CHILD_COOKIE;

impl Process {
    pub(crate) fn sys_getdents64(&self, fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
        self.with_file(fd, false, |file| {
            let inode = file.inode();
            let index = inode.dir_index().ok_or(Errno::ENOTDIR)?;
            let _g = self.vfs.collector.enter();
            let mut pos = file.pos.lock();
            let locked = index.read();
            let mut used = 0;
            let mut emit =
                |ino: u64, next: u64, dtype: u8, name: &[u8], used: &mut usize| -> bool {
                    match put_dirent64(buf, *used, ino, next as i64, dtype, name) {
                        Some(n) => {
                            *used += n;
                            true
                        }
                        None => false,
                    }
                };
            if locked.dead {
                return Err(Errno::ENOENT);
            }
            if *pos == 0 {
                if !emit(inode.ino(), 1, DT_DIR, b".", &mut used) {
                    return Err(Errno::EINVAL);
                }
                *pos = 1;
            }
            if *pos == 1 {
                // SAFETY: the file references its dentry; parents are
                // referenced by their children.
                let d = unsafe { &*file.dentry };
                let parent = d.parent_ptr();
                let pino = if parent.is_null() {
                    inode.ino()
                } else {
                    // SAFETY: a positive parent (referenced by the child) keeps its inode.
                    unsafe { &*(*parent).inode_ptr() }.ino()
                };
                if !emit(pino, FIRST_CHILD_COOKIE, DT_DIR, b"..", &mut used) {
                    return if used == 0 {
                        Err(Errno::EINVAL)
                    } else {
                        Ok(used)
                    };
                }
                *pos = FIRST_CHILD_COOKIE;
            }
            let mut name = Vec::with_capacity(64);
            for (cookie, child) in locked.entries_from(*pos) {
                // SAFETY: indexed children are pinned and the directory lock
                // is held.
                let c = unsafe { &*child.dentry };
                name.clear();
                c.name_into(&mut name);
                if !emit(
                    child.ino,
                    cookie + 1,
                    mode_to_dtype(child.file_type),
                    &name,
                    &mut used,
                ) {
                    if used == 0 {
                        return Err(Errno::EINVAL);
                    }
                    break;
                }
                *pos = cookie + 1;
            }
            drop(locked);
            touch_atime(inode);
            Ok(used)
        })
    }
}
