//! Connectors: turn files of the field's public formats into a [`crate::TimeFDataset`].
//!
//! Each connector is usable without the CLI; all share [`IdMode`] and the defaults
//! below (issue 3: default spec type `unknown`, default sampling rate 1 Hz).

pub mod arrow;
pub mod tsf;
pub mod ucr;

/// Spec type used when the caller gives none.
pub const DEFAULT_SPEC_TYPE: &str = "unknown";

/// Sampling rate in Hz used when neither the caller nor the file gives one.
pub const DEFAULT_SAMPLING_RATE_HZ: f64 = 1.0;

/// The namespace of the UUIDv5 ids made by [`IdMode::Uuid`]
/// (`docs/format.md`, "Connector ids"): UUIDv5 of the URL namespace and `https://timef.dev/ids/v1`.
pub const ID_NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0xbdf6_e50b_617c_5b86_9d6a_1774_ddd3_2bb9);

/// The error for an input file that cannot be opened or read: the user named
/// it, so it is bad input ([`crate::Error::InvalidInput`]), not a machine fault.
pub(crate) fn unreadable(path: &std::path::Path, e: std::io::Error) -> crate::Error {
    crate::Error::input(path, None, format!("cannot read the input file: {e}"))
}

/// How connectors spell ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IdMode {
    /// Readable ids built from names, e.g. `ArrowHead-train-0/0` (stored as strings).
    #[default]
    String,
    /// Each readable id mapped to a UUIDv5 in [`ID_NAMESPACE`] (stored as uuid16).
    Uuid,
}

impl IdMode {
    /// The id for the readable form `readable`.
    pub fn id(self, readable: &str) -> String {
        match self {
            IdMode::String => readable.to_string(),
            IdMode::Uuid => uuid::Uuid::new_v5(&ID_NAMESPACE, readable.as_bytes()).hyphenated().to_string(),
        }
    }
}
