//! Stand-in; replaced by the tmpfsdata branch.
use crate::abi::Errno;
#[derive(Default)]
pub struct FileData {
    bytes: Vec<u8>,
}
impl FileData {
    pub const fn new() -> FileData {
        FileData { bytes: Vec::new() }
    }
    pub fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> usize {
        if offset >= self.len() {
            return 0;
        }
        let n = buf.len().min((self.len() - offset) as usize);
        buf[..n].copy_from_slice(&self.bytes[offset as usize..offset as usize + n]);
        n
    }
    pub fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<usize, Errno> {
        if data.is_empty() {
            return Ok(0);
        }
        let end = offset as usize + data.len();
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
        self.bytes[offset as usize..end].copy_from_slice(data);
        Ok(data.len())
    }
    pub fn set_len(&mut self, len: u64) {
        self.bytes.resize(len as usize, 0);
    }
    pub fn seek_data(&self, offset: u64) -> Result<u64, Errno> {
        if offset >= self.len() { Err(Errno::ENXIO) } else { Ok(offset) }
    }
    pub fn seek_hole(&self, offset: u64) -> Result<u64, Errno> {
        if offset >= self.len() { Err(Errno::ENXIO) } else { Ok(self.len()) }
    }
    pub fn blocks_512(&self) -> u64 {
        self.len().div_ceil(4096) * 8
    }
    pub fn punch_hole(&mut self, offset: u64, len: u64) {
        let end = (offset + len).min(self.len());
        if offset < end {
            self.bytes[offset as usize..end as usize].fill(0);
        }
    }
}
