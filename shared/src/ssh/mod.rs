//! The SSH tools' inventory (docs/contracts.md#list_servers-and-ssh_run),
//! as the configuration reads it; the tools themselves, the connection
//! pool and one command per call are `toolgate-ssh`'s.
//!
//! - `doc`: the inventory's documents as written;
//! - `hostkey`, `policy`: the pin and the command guard rail;
//! - `readonly`: which commands are known to be read-only (the `readonly`
//!   preset);
//! - `inventory`: servers ready to use, their sources, the TTL cache
//!   (servers from SSM are `toolgate-aws`'s).

pub mod doc;
#[cfg(not(target_arch = "wasm32"))]
pub mod hostkey;
#[cfg(not(target_arch = "wasm32"))]
pub mod inventory;
pub mod policy;
pub mod readonly;
