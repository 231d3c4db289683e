//! One module per command of `curator`; what they share lives in the modules beside this one
//! (`input`, `pipeline`, `replayed`, `report`, `session_file`).

pub(crate) mod chat;
pub(crate) mod curate;
pub(crate) mod demo;
pub(crate) mod inspect;
pub(crate) mod prune;
pub(crate) mod replay;
pub(crate) mod trace;
