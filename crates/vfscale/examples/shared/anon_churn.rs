//! One create+close of an anonymous object of the named kind (the bench's
//! `anon-churn` operation), shared by the examples that measure it.
use vfscale::abi::*;
use vfscale::{Process, ProcessApi};

/// The kinds `churn` knows, for usage messages.
pub const KINDS: &str = "socket|pipe|eventfd|memfd";

/// Creates and closes one object of `kind`; false for an unknown kind.
pub fn churn(p: &Process, kind: &str) -> bool {
    match kind {
        "socket" => p.close(p.socket(AF_UNIX, SOCK_STREAM, 0).unwrap()).unwrap(),
        "pipe" => {
            let [r, w] = p.pipe2(0).unwrap();
            p.close(r).unwrap();
            p.close(w).unwrap();
        }
        "eventfd" => p.close(p.eventfd(0, 0).unwrap()).unwrap(),
        "memfd" => p.close(p.memfd_create(b"churn", 0).unwrap()).unwrap(),
        _ => return false,
    }
    true
}
