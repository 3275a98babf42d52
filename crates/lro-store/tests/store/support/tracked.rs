//! Chunks that count their live bytes: a store holding a chunk keeps it
//! alive, so the peak of the count is the most of an object held at once.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use bytes::Bytes;

/// Live and peak bytes of the chunks made by one [`Meter`].
#[derive(Debug, Default)]
pub(crate) struct Meter {
    live: AtomicUsize,
    peak: AtomicUsize,
}

impl Meter {
    /// A new meter.
    pub(crate) fn new() -> Arc<Self> {
        Arc::default()
    }

    /// A chunk holding `data`, counted while any `Bytes` of it lives.
    pub(crate) fn chunk(self: &Arc<Self>, data: Vec<u8>) -> Bytes {
        let len = data.len();
        let live = self.live.fetch_add(len, Ordering::SeqCst) + len;
        self.peak.fetch_max(live, Ordering::SeqCst);
        Bytes::from_owner(Tracked {
            data,
            meter: Arc::clone(self),
        })
    }

    /// Bytes alive now.
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// The most bytes alive at once.
    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

struct Tracked {
    data: Vec<u8>,
    meter: Arc<Meter>,
}

impl AsRef<[u8]> for Tracked {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.meter.live.fetch_sub(self.data.len(), Ordering::SeqCst);
    }
}
