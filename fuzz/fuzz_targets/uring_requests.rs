//! Fuzz target: the io_uring transport's request decoder and reply
//! encoder, from raw bytes.
//!
//! `vfscale_fuse::RingEntryServer` runs a ring entry through exactly the
//! code a ring queue's thread runs (decode the `fuse_in_header` and the
//! opcode's argument struct from the entry's header buffer, the names and
//! data from its payload buffer, call the operation, encode the reply into
//! the same buffers) and then reads the reply as the kernel would. The
//! input is a script of requests (`RingEntryServer::run_script` documents
//! its format): node ids and file handles mostly from earlier replies, the
//! argument structs and payloads raw.
//!
//! Checked: no panic anywhere on the path (the queue thread's catch would
//! turn one into EIO; here it is a finding); every reply well framed (its
//! length, its error, its unique, its listing records); after the session
//! ends and the namespace is dropped, `Vfs::check_invariants` passes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use std::time::Duration;
use vfscale::fs::FsLimits;
use vfscale::{Namespace, Vfs, VfsConfig};

fuzz_target!(|data: &[u8]| {
    let vfs = Vfs::with_config(VfsConfig {
        hash_bits: 8,
        tmpfs_limits: FsLimits {
            max_bytes: 64 << 20,
            max_inodes: 4096,
        },
        ..VfsConfig::default()
    });
    let ns = Arc::new(Namespace::new(&vfs));
    let server = vfscale_fuse::RingEntryServer::new(
        ns.clone(),
        vfscale_fuse::Ttls {
            entry: Duration::from_secs(1),
            attr: Duration::from_secs(1),
        },
    );
    if let Err(e) = server.run_script(data) {
        panic!("malformed reply: {e}");
    }
    server.destroy();
    drop((server, ns));
    vfs.drop_caches();
    if let Err(e) = vfs.check_invariants() {
        panic!("invariant violated: {e}");
    }
});
