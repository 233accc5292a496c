//! Directories: the ordered child index with stable readdir cookies.
pub mod index;
