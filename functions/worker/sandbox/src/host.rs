//! What the module imports from the Worker (module `toolgate`): the clock,
//! randomness, the deadline and the halt at a tool request. Nothing else
//! reaches outside the module.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[link(wasm_import_module = "toolgate")]
unsafe extern "C" {
    /// `Date.now()`: frozen while a request computes, on Workers.
    #[link_name = "now_ms"]
    fn host_now_ms() -> f64;
    /// `crypto.getRandomValues` over `len` bytes at `ptr`.
    #[link_name = "random_fill"]
    fn host_random_fill(ptr: *mut u8, len: usize);
    /// Throws in the Worker: the script slept past its timeout. Never returns.
    #[link_name = "deadline"]
    fn host_deadline();
    /// Throws in the Worker: the script stops at a tool request the
    /// dispatcher must answer (code mode). Never returns.
    #[link_name = "halt"]
    fn host_halt();
}

/// True while Wizer snapshots the module: imports do not exist then.
pub static WARMING: AtomicBool = AtomicBool::new(false);
/// The warm-up's stand-in entropy (a fixed SplitMix64 stream).
static WARM_STATE: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

pub fn now_ms() -> f64 {
    if WARMING.load(Ordering::Relaxed) {
        return 0.0;
    }
    // SAFETY: an import without arguments or memory access.
    unsafe { host_now_ms() }
}

pub fn deadline() -> ! {
    // SAFETY: the import throws; the instance is dropped by the Worker.
    unsafe { host_deadline() };
    unreachable!("the deadline import returned")
}

pub fn halt() -> ! {
    // SAFETY: the import throws; the instance is dropped by the Worker.
    unsafe { host_halt() };
    unreachable!("the halt import returned")
}

/// getrandom's custom backend (`--cfg getrandom_backend="custom"`).
///
/// # Safety
/// getrandom passes a writable buffer of `len` bytes.
#[unsafe(no_mangle)]
unsafe extern "Rust" fn __getrandom_v03_custom(
    dest: *mut u8,
    len: usize,
) -> Result<(), getrandom::Error> {
    if WARMING.load(Ordering::Relaxed) {
        // Only the warm-up's hash of nothing secret (the snapshot is the
        // same for every call anyway); each call reseeds `random`.
        for i in 0..len {
            let mut z = WARM_STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            // SAFETY: i < len, inside the buffer getrandom handed us.
            unsafe { *dest.add(i) = (z ^ (z >> 31)) as u8 };
        }
        return Ok(());
    }
    // SAFETY: the Worker writes exactly `len` bytes at `dest`, which
    // getrandom guarantees is writable for `len` bytes.
    unsafe { host_random_fill(dest, len) };
    Ok(())
}
