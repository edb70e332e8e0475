//! Page and frame sizes and the arithmetic between pages, frames and file offsets.

use crate::page::PageId;

/// Smallest page size accepted.
pub const MIN_PAGE_SIZE: u32 = 4096;
/// Largest page size accepted (slot offsets are 16-bit).
pub const MAX_PAGE_SIZE: u32 = 32 * 1024;
/// Largest frame size accepted.
pub const MAX_FRAME_SIZE: u32 = 64 * 1024 * 1024;

/// The file's page and frame sizes, fixed at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes per page.
    pub page_size: u32,
    /// Bytes per frame.
    pub frame_size: u32,
}

impl Geometry {
    /// Checks the sizes: powers of two, page in 4..=32 KiB, frame a multiple of the page.
    pub fn new(page_size: u32, frame_size: u32) -> Result<Self, String> {
        if !page_size.is_power_of_two() || !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) {
            return Err(format!(
                "page size {page_size} must be a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE} bytes"
            ));
        }
        if !frame_size.is_power_of_two()
            || frame_size < page_size * 2
            || frame_size > MAX_FRAME_SIZE
        {
            return Err(format!(
                "frame size {frame_size} must be a power of two, at least two pages ({}) and at most {MAX_FRAME_SIZE} bytes",
                page_size * 2
            ));
        }
        Ok(Geometry {
            page_size,
            frame_size,
        })
    }

    /// Pages per frame.
    #[inline]
    pub fn pages_per_frame(&self) -> u64 {
        u64::from(self.frame_size / self.page_size)
    }

    /// Byte offset of a page.
    #[inline]
    pub fn offset(&self, page: PageId) -> u64 {
        page * u64::from(self.page_size)
    }

    /// The frame a page belongs to.
    #[inline]
    pub fn frame_of(&self, page: PageId) -> u64 {
        page / self.pages_per_frame()
    }

    /// First page of a frame.
    #[inline]
    pub fn frame_start(&self, frame: u64) -> PageId {
        frame * self.pages_per_frame()
    }

    /// Page size as usize.
    #[inline]
    pub fn page_bytes(&self) -> usize {
        self.page_size as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_checked_and_arithmetic_holds() {
        let g = Geometry::new(4096, 512 * 1024).expect("defaults");
        assert_eq!(g.pages_per_frame(), 128);
        assert_eq!(g.frame_of(127), 0);
        assert_eq!(g.frame_of(128), 1);
        assert_eq!(g.frame_start(2), 256);
        assert_eq!(g.offset(3), 3 * 4096);
        assert!(Geometry::new(1000, 512 * 1024).is_err());
        assert!(Geometry::new(4096, 4096).is_err());
        assert!(Geometry::new(65536, 512 * 1024).is_err());
    }
}
