#![no_std]

extern crate alloc;

pub mod constants;
pub mod engine;
pub mod string;
pub mod validate;

pub use constants::{SRE_MAGIC, SreAtCode, SreCatCode, SreFlag, SreInfo, SreOpcode};
pub use engine::{Request, SearchIter, SreError, State};
pub use string::{StrDrive, StringCursor};
pub use validate::{InvalidCode, validate};

pub const CODESIZE: usize = 4;

#[cfg(target_pointer_width = "32")]
pub const MAXREPEAT: usize = usize::MAX - 1;
#[cfg(target_pointer_width = "64")]
pub const MAXREPEAT: usize = u32::MAX as usize;

#[cfg(target_pointer_width = "32")]
pub const MAXGROUPS: usize = MAXREPEAT / 4 / 2;
// Toolgate (PATCHES.md 3): CPython's `SRE_MAXGROUPS`, `INT32_MAX / 2` on
// 64-bit platforms (this was `MAXREPEAT / 2`, twice CPython's).
#[cfg(target_pointer_width = "64")]
pub const MAXGROUPS: usize = i32::MAX as usize / 2;
