//! What a keeper's object keeps in memory of the kept calls it served
//! last ([`Warm`]): each one parsed, with its log's [`Manifest`], so a
//! warm round neither reads back nor parses what earlier rounds stored
//! (see [`super::log`]).

use std::cell::RefCell;

use super::log::Manifest;

/// What a keeper's object holds of the calls it served last: each one
/// parsed, with the manifest of its rows. Exact because the object is
/// the only writer of its storage and its writes are synchronous; a
/// store forgets an entry whose write failed, and an object's memory
/// goes with it when it is evicted.
#[derive(Debug)]
pub struct Warm<T> {
    held: RefCell<Vec<(String, Manifest, T)>>,
}

/// How many calls a [`Warm`] holds (a shard's object serves many).
const WARM_CALLS: usize = 8;

/// How many bytes of logs a [`Warm`] holds parsed, at most.
const WARM_BYTES: u64 = 48 * 1024 * 1024;

impl<T> Default for Warm<T> {
    fn default() -> Self {
        Self {
            held: RefCell::new(Vec::new()),
        }
    }
}

impl<T: Clone> Warm<T> {
    /// The call `id` and its manifest, if held.
    pub fn get(&self, id: &str) -> Option<(T, Manifest)> {
        let held = self.held.borrow();
        let (_, m, t) = held.iter().find(|(k, _, _)| k == id)?;
        Some((t.clone(), m.clone()))
    }

    /// `f` of call `id` as held, and its log; `f(None)` if not held.
    pub fn with<R>(&self, id: &str, f: impl FnOnce(Option<(&T, &Manifest)>) -> R) -> R {
        let held = self.held.borrow();
        f(held
            .iter()
            .find(|(k, _, _)| k == id)
            .map(|(_, m, t)| (t, m)))
    }

    /// Holds call `id` as its rows now are (the latest first).
    pub fn put(&self, id: &str, manifest: Manifest, t: T) {
        let mut held = self.held.borrow_mut();
        held.retain(|(k, _, _)| k != id);
        held.insert(0, (id.to_string(), manifest, t));
        let mut bytes = 0;
        let mut keep = 0;
        for (_, m, _) in held.iter() {
            bytes += m.bytes;
            if keep == WARM_CALLS || (keep > 0 && bytes > WARM_BYTES) {
                break;
            }
            keep += 1;
        }
        held.truncate(keep);
    }

    /// Changes the held copy of call `id` as its row was changed (its
    /// status, a claim): its log is as it was.
    pub fn touch(&self, id: &str, change: impl FnOnce(&mut T)) {
        if let Some((_, _, t)) = self.held.borrow_mut().iter_mut().find(|(k, _, _)| k == id) {
            change(t);
        }
    }

    /// Forgets call `id` (its rows changed otherwise, or a write failed).
    pub fn forget(&self, id: &str) {
        self.held.borrow_mut().retain(|(k, _, _)| k != id);
    }

    /// Forgets every call.
    pub fn clear(&self) {
        self.held.borrow_mut().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_holds_few_and_the_latest() {
        let w: Warm<u32> = Warm::default();
        for n in 0..20u32 {
            w.put(&n.to_string(), Manifest::default(), n);
        }
        assert_eq!(w.get("19").map(|(t, _)| t), Some(19));
        assert!(w.get("0").is_none());
        w.forget("19");
        assert!(w.get("19").is_none());
    }
}
