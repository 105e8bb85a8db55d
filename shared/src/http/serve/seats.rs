//! The per-client connection cap: a client is an IPv4 address or an
//! IPv6 /64, each with at most `per_client` seats.

use super::*;

/// A client, as the connection cap counts it: an IPv4 address (IPv4-mapped
/// IPv6 included), or an IPv6 /64 (one host's usual share).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum ClientKey {
    V4([u8; 4]),
    V6([u8; 8]),
}

impl ClientKey {
    pub(super) fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(a) => Self::V4(a.octets()),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => Self::V4(v4.octets()),
                None => {
                    let o = a.octets();
                    let mut prefix = [0u8; 8];
                    prefix.copy_from_slice(&o[..8]);
                    Self::V6(prefix)
                }
            },
        }
    }
}

/// Connections open per client.
pub(super) struct Seats {
    per_client: usize,
    pub(super) taken: Mutex<HashMap<ClientKey, usize>>,
}

/// One open connection of a client; given back on drop.
pub(super) struct Seat {
    seats: Arc<Seats>,
    key: ClientKey,
}

impl Seats {
    pub(super) fn new(per_client: usize) -> Self {
        Self {
            per_client,
            taken: Mutex::new(HashMap::new()),
        }
    }

    /// A seat for `key`, unless it holds `per_client` already.
    pub(super) fn take(self: &Arc<Self>, key: ClientKey) -> Option<Seat> {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        let n = taken.entry(key).or_insert(0);
        if *n >= self.per_client {
            return None;
        }
        *n += 1;
        Some(Seat {
            seats: self.clone(),
            key,
        })
    }

    #[cfg(test)]
    pub(super) fn open(&self) -> usize {
        let taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        taken.values().sum()
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut taken = self.seats.taken.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = taken.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                taken.remove(&self.key);
            }
        }
    }
}
