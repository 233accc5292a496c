//! A read's destination: the caller's buffers (a readv vector), filled in
//! order by one or more copies. Pipes, socket messages and eventfd
//! counters all read into one through it.
//!
//! Invariant: `index`/`offset` name the first byte not yet filled; a put
//! never writes past the last buffer (what does not fit is left out).

pub(crate) struct Scatter<'a, 'b> {
    bufs: &'a mut [&'b mut [u8]],
    index: usize,
    offset: usize,
}

impl<'a, 'b> Scatter<'a, 'b> {
    pub(crate) fn new(bufs: &'a mut [&'b mut [u8]]) -> Self {
        Scatter {
            bufs,
            index: 0,
            offset: 0,
        }
    }

    /// Copies as much of `data` as still fits behind what was put before;
    /// returns how much that was.
    pub(crate) fn put(&mut self, mut data: &[u8]) -> usize {
        let mut copied = 0;
        while !data.is_empty() && self.index < self.bufs.len() {
            let dst = &mut self.bufs[self.index][self.offset..];
            let n = dst.len().min(data.len());
            dst[..n].copy_from_slice(&data[..n]);
            data = &data[n..];
            copied += n;
            self.offset += n;
            if self.offset == self.bufs[self.index].len() {
                self.index += 1;
                self.offset = 0;
            }
        }
        copied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puts_fill_the_buffers_in_order_and_stop_at_the_end() {
        let (mut a, mut b, mut c) = ([0u8; 2], [0u8; 0], [0u8; 3]);
        let mut bufs: [&mut [u8]; 3] = [&mut a, &mut b, &mut c];
        let mut s = Scatter::new(&mut bufs);
        assert_eq!(s.put(b"xyz"), 3);
        assert_eq!(s.put(b"uvw"), 2, "only what still fits");
        assert_eq!(s.put(b"q"), 0);
        assert_eq!((a, c), (*b"xy", *b"zuv"));
    }
}
