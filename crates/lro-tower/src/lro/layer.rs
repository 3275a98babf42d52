//! [`LroLayer`]: builds [`Lro`] around any `rmcp::ServerHandler`.

use std::sync::Arc;

use lro_core::{EventSink, OffloadConfig, Offloader, TokenEstimator};
use lro_extract::{ExtractConfig, Extractor};
use tower_layer::Layer;

use super::{Lro, error::Error, intercept::Shared};

/// A tower layer that wraps a server handler with Large Result Offloading.
///
/// Setters take and return `self`. Clones share one configuration, estimator
/// and event sink.
#[derive(Clone)]
pub struct LroLayer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LroLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LroLayer")
            .field("cfg", &self.shared.cfg)
            .finish_non_exhaustive()
    }
}

impl Default for LroLayer {
    fn default() -> Self {
        Self::new(OffloadConfig::default())
    }
}

impl LroLayer {
    /// A layer for `cfg`, with the estimator its `estimator` and
    /// `exact_band` ask for and no extra event sink.
    pub fn new(cfg: OffloadConfig) -> Self {
        let dir = cfg.resolved_output_dir();
        let offloader = Offloader::new(&dir)
            .ttl(std::time::Duration::from_secs(cfg.ttl_seconds))
            .profile(cfg.profile)
            .native_extract(cfg.extract)
            .guidance(cfg.guidance);
        let estimator = cfg.token_estimator();
        let extractor = cfg
            .extract
            .then(|| extractor(&cfg, ExtractConfig::new(dir), &estimator));
        Self {
            shared: Arc::new(Shared {
                cfg,
                offloader,
                estimator,
                sink: Arc::new(()),
                extractor,
                context: None,
            }),
        }
    }

    /// Like [`LroLayer::new`], but checks the configuration first.
    pub fn try_new(cfg: OffloadConfig) -> Result<Self, Error> {
        cfg.validate()?;
        Ok(Self::new(cfg))
    }

    fn map(self, f: impl FnOnce(&mut Shared)) -> Self {
        let mut shared = Arc::try_unwrap(self.shared).unwrap_or_else(|arc| Shared {
            cfg: arc.cfg.clone(),
            offloader: arc.offloader.clone(),
            estimator: arc.estimator.clone(),
            sink: arc.sink.clone(),
            extractor: arc.extractor.clone(),
            context: arc.context.clone(),
        });
        f(&mut shared);
        Self {
            shared: Arc::new(shared),
        }
    }

    /// Sets the token estimator, in place of the configured one. Defaults to
    /// [`OffloadConfig::token_estimator`]: [`ScriptAware`](lro_core::ScriptAware)
    /// (characters / 4 for Latin text, one token per CJK character), banded
    /// with an exact tokenizer when `estimator` names one.
    #[must_use]
    pub fn estimator(self, estimator: impl TokenEstimator) -> Self {
        self.map(|s| {
            s.estimator = Arc::new(estimator);
            // `lro_extract` measures its output with the same estimator.
            if let Some(ex) = &s.extractor {
                s.extractor = Some(extractor(&s.cfg, ex.config().clone(), &s.estimator));
            }
        })
    }

    /// Adds the context-offload tools (`context_offload`, `context_grep`,
    /// `context_read_file`) next to the server's, served by `offloader`
    /// (whose store roots confine every path). A tool of the same name on
    /// the server wins. Defaults to none.
    #[must_use]
    pub fn context_tools(self, offloader: lro_context::ContextOffloader) -> Self {
        self.map(|s| s.context = Some(offloader))
    }

    /// Sets the sink that receives every event after tracing and metrics.
    /// Defaults to `()` (none).
    #[must_use]
    pub fn event_sink(self, sink: impl EventSink) -> Self {
        self.map(|s| s.sink = Arc::new(sink))
    }

    /// Sets the limits of `lro_extract` (time, output size). Its root
    /// directory is always the output directory, and its output is always
    /// kept within the threshold (of the `lro_extract` tool, when it has its
    /// own). Defaults to 5 s and 256 KiB.
    /// Has no effect when `extract` is off in the configuration.
    #[must_use]
    pub fn extract_config(self, cfg: ExtractConfig) -> Self {
        self.map(|s| {
            if s.extractor.is_some() {
                let cfg = cfg.root_dir(s.offloader.dir().to_owned());
                s.extractor = Some(extractor(&s.cfg, cfg, &s.estimator));
            }
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &OffloadConfig {
        &self.shared.cfg
    }

    /// Wraps `inner`; the same as [`Layer::layer`].
    pub fn wrap<H>(&self, inner: H) -> Lro<H> {
        Lro::from_shared(inner, self.shared.clone())
    }
}

/// The `lro_extract` engine: `cfg`, with output kept within the tool's
/// threshold as `estimator` measures it.
fn extractor(
    offload: &OffloadConfig,
    cfg: ExtractConfig,
    estimator: &Arc<dyn TokenEstimator>,
) -> Extractor {
    let budget = offload.threshold_for(super::EXTRACT_TOOL);
    Extractor::new(cfg.max_output_tokens(budget)).estimator(estimator.clone())
}

impl<H> Layer<H> for LroLayer {
    type Service = Lro<H>;

    fn layer(&self, inner: H) -> Self::Service {
        self.wrap(inner)
    }
}
