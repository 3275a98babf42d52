//! Set-up errors of the layer.

/// The layer could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The offload configuration is invalid; the message names the key.
    #[error(transparent)]
    Config(#[from] lro_core::ConfigError),
    /// The object store the configuration names cannot be opened.
    #[error(transparent)]
    Store(#[from] Box<lro_store::StoreError>),
}
