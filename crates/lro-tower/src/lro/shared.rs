//! [`Shared`]: the state every clone of one layer holds, and how it is
//! built from an [`OffloadConfig`].
//!
//! [`LroLayer`](super::LroLayer)'s setters change it through the methods
//! here; the request path reads it (see `intercept.rs`, `extract.rs`,
//! `context.rs`).

use std::{path::PathBuf, sync::Arc};

use lro_core::{EventSink, OffloadConfig, Offloader, TokenEstimator};
use lro_extract::{ExtractConfig, Extractor, Isolation, WorkerPool, access::Access};

use super::{CallerTrace, remote::Remote};
use crate::principal::{FromHttpRequest, PrincipalSource};

/// State shared by every clone of one layer.
#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) cfg: OffloadConfig,
    /// The output directory `cfg` names: results, or a store's working
    /// copies, and `lro_extract`'s root.
    pub(crate) output_dir: PathBuf,
    pub(crate) offloader: Offloader,
    pub(crate) estimator: Arc<dyn TokenEstimator>,
    pub(crate) sink: Arc<dyn EventSink>,
    /// Who is calling, read from each request.
    pub(crate) principal: Arc<dyn PrincipalSource>,
    /// The `lro_extract` engine, when the tool is on.
    pub(crate) extractor: Option<Extractor>,
    /// Whose results `lro_extract` may read, and until when.
    pub(crate) access: Access,
    /// Where `lro_extract` queries run.
    pub(crate) isolation: Arc<dyn Isolation>,
    /// The context-offload tools' engine, when they are on.
    #[cfg(feature = "context")]
    pub(crate) context: Option<lro_context::ContextOffloader>,
    /// What a caller's `traceparent` makes of the layer's spans.
    pub(crate) caller_trace: CallerTrace,
    /// The object store results go to, when not the output directory.
    pub(crate) remote: Option<Remote>,
    /// The key principals are keyed with (`LroLayer::principal_key`).
    pub(crate) folder_key: Option<lro_core::principal::FolderKey>,
    /// The layer's own tools answer, and the inner handler's tools of the
    /// same names are hidden (`LroLayer::own_tools_win`).
    pub(crate) own_tools_win: bool,
}

impl Shared {
    /// The state for `cfg`: its offloader, the estimator its `estimator` and
    /// `exact_band` ask for, `lro_extract` when `extract` is on (within the
    /// limits of its `extraction` table), no event sink and no context
    /// tools. The object store `cfg` names, if any, is opened here; one
    /// that cannot be is logged, and results stay in the output directory
    /// (`LroLayer::try_new` refuses it instead).
    pub(crate) fn new(cfg: OffloadConfig) -> Self {
        let store = lro_store::from_config(&cfg).unwrap_or_else(|err| {
            tracing::error!(error = %lro_core::error::chain(&err), "the configured offload store cannot be opened; results stay in the output directory");
            None
        });
        let mut shared = Self::local(cfg);
        if let Some(store) = store {
            shared.set_store(store);
        }
        shared
    }

    /// Results go to `store`: the offloader writes through it, and
    /// `lro_extract` reads by handle.
    pub(crate) fn set_store(&mut self, store: Arc<dyn lro_store::Store>) {
        let dir = self.output_dir.clone();
        let timeout = std::time::Duration::from_secs(self.cfg.store_timeout_seconds);
        self.offloader = self
            .offloader
            .clone()
            .sink(Arc::new(lro_store::BlockingSink::new(store.clone())));
        self.remote = Some(Remote::new(store, dir, timeout, &self.cfg.extraction));
    }

    /// The caller of the request `cx`: the principal source's, keyed.
    pub(crate) fn caller(
        &self,
        cx: &rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> lro_core::principal::Principal {
        let principal = self.principal.principal(cx);
        match &self.folder_key {
            Some(key) => principal.keyed(key),
            None => principal,
        }
    }

    /// Whether the layer serves the context tools (never in a build without
    /// the `context` feature).
    pub(crate) fn has_context(&self) -> bool {
        #[cfg(feature = "context")]
        return self.context.is_some();
        #[cfg(not(feature = "context"))]
        false
    }

    /// The state for `cfg` with results in the output directory.
    pub(crate) fn local(cfg: OffloadConfig) -> Self {
        let caller_trace = cfg.caller_trace;
        let dir = lro_store::resolved_output_dir(&cfg);
        let ttl = std::time::Duration::from_secs(cfg.ttl_seconds);
        let access = Access::new(&dir).ttl(ttl);
        let offloader = Offloader::new(lro_store::DirSink::new(&dir).quota(cfg.quota()))
            .ttl(ttl)
            .profile(cfg.profile)
            .native_extract(cfg.extract)
            .guidance(cfg.guidance);
        let estimator = cfg.token_estimator();
        let isolation: Arc<dyn Isolation> =
            Arc::new(WorkerPool::new().estimator(cfg.estimator, cfg.exact_band));
        // The pool needs none of the limits up front: it reads the memory
        // budget, the timeout and how many idle workers to keep from each
        // job's extractor.
        let limits = ExtractConfig::new(&dir).limits(&cfg.extraction);
        let extractor = cfg
            .extract
            .then(|| extractor(&cfg, limits, &estimator, &isolation));
        Self {
            cfg,
            output_dir: dir,
            offloader,
            estimator,
            sink: Arc::new(()),
            principal: Arc::new(FromHttpRequest),
            extractor,
            access,
            isolation,
            #[cfg(feature = "context")]
            context: None,
            caller_trace,
            remote: None,
            own_tools_win: false,
            folder_key: None,
        }
    }

    /// Replaces the estimator; `lro_extract` measures its output with the
    /// same one.
    pub(crate) fn set_estimator(&mut self, estimator: Arc<dyn TokenEstimator>) {
        self.estimator = estimator;
        if let Some(ex) = &self.extractor {
            self.extractor = Some(extractor(
                &self.cfg,
                ex.config().clone(),
                &self.estimator,
                &self.isolation,
            ));
        }
    }

    /// Replaces where `lro_extract` queries run.
    pub(crate) fn set_isolation(&mut self, isolation: Arc<dyn Isolation>) {
        self.isolation = isolation;
        if let Some(ex) = &self.extractor {
            let cfg = ex.config().clone();
            self.extractor = Some(extractor(&self.cfg, cfg, &self.estimator, &self.isolation));
        }
    }

    /// Replaces the limits of `lro_extract`, when it is on; its root stays
    /// the output directory.
    pub(crate) fn set_extract_config(&mut self, cfg: ExtractConfig) {
        if self.extractor.is_some() {
            let cfg = cfg.root_dir(self.output_dir.clone());
            self.extractor = Some(extractor(&self.cfg, cfg, &self.estimator, &self.isolation));
        }
    }
}

/// The `lro_extract` engine: `cfg`, with output kept within the tool's
/// threshold as `estimator` measures it.
fn extractor(
    offload: &OffloadConfig,
    cfg: ExtractConfig,
    estimator: &Arc<dyn TokenEstimator>,
    isolation: &Arc<dyn Isolation>,
) -> Extractor {
    let budget = offload.threshold_for(super::EXTRACT_TOOL);
    let isolation = isolation.clone();
    // The tool shows the text only: no values are built, or sent back
    // from a worker.
    Extractor::new(cfg.max_output_tokens(budget).keep_values(false))
        .estimator(estimator.clone())
        .isolation(move |job: lro_extract::Job<'_>| isolation.run(job))
}
