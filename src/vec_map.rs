//! A map and a set kept as sorted vectors, for the crate's own small maps.
//!
//! Each distinct `BTreeMap<K, V>` links its own B-tree (insert with its
//! splits, remove with its merges, clone, drop, the iterators): a few KB
//! of wasm per key and value type. These are a `Vec` of entries sorted by
//! key and a binary search: per type only the few thin methods a site
//! calls. The maps they stand in for hold a handful of entries (a call's
//! answers, the versions of a tool), where a vector is no slower.
//!
//! What a `BTreeMap` promised is kept: keys unique and in order, so a map
//! is written as the same JSON object (keys in order), and an object read
//! back with a key given twice keeps its last value. Public types keep
//! these too (a journal's answers, a round's requests): a map of them
//! reads like a `BTreeMap`'s (`get`, `insert`, `iter`, `for (k, v) in &map`).

use std::borrow::Borrow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A map sorted by key (see the module's docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VecMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> VecMap<K, V> {
    /// An empty map.
    pub const fn new() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    /// Whether it has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The values, in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values, in key order, to change in place.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// The entries, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }
}

impl<K: Ord, V> VecMap<K, V> {
    /// Where `key` is (`Ok`) or would go (`Err`).
    fn find<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.entries.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// The value under `key`, if any.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    /// The value under `key`, if any, to change in place.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| &mut self.entries[i].1)
    }

    /// Takes the value under `key` out, if there is one.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).ok().map(|i| self.entries.remove(i).1)
    }

    /// Whether there is a value under `key`.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.find(key).is_ok()
    }

    /// Keeps only the entries `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
    }

    /// Puts `value` under `key`; the value it replaces, if any.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// The value under `key`, put there by `make` if there was none
    /// (`BTreeMap::entry(key).or_insert_with(make)`).
    pub fn or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (key, make()));
                i
            }
        };
        &mut self.entries[i].1
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for VecMap<K, V> {
    /// Inserted one by one (a later value under a key replaces an earlier
    /// one): a sort would be linked per entry type, and entries that come
    /// in order (as a map written by one of these) only append.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = Self::new();
        map.extend(iter);
        map
    }
}

impl<K: Ord, V> Extend<(K, V)> for VecMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K: Ord, V, const N: usize> From<[(K, V); N]> for VecMap<K, V> {
    fn from(entries: [(K, V); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl<'a, K, V> IntoIterator for &'a VecMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;

    /// The entries, in key order.
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

impl<K, V> IntoIterator for VecMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    /// The entries, in key order.
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<K: Serialize, V: Serialize> Serialize for VecMap<K, V> {
    /// A JSON object, keys in order: what a `BTreeMap` writes.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de, K, V> Deserialize<'de> for VecMap<K, V>
where
    K: Ord + Deserialize<'de>,
    V: Deserialize<'de>,
{
    /// From an object (a key given twice keeps its last value).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries<K, V>(PhantomData<(K, V)>);

        impl<'de, K, V> Visitor<'de> for Entries<K, V>
        where
            K: Ord + Deserialize<'de>,
            V: Deserialize<'de>,
        {
            type Value = VecMap<K, V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut map = VecMap::new();
                while let Some((k, v)) = a.next_entry()? {
                    map.insert(k, v);
                }
                Ok(map)
            }
        }

        d.deserialize_map(Entries(PhantomData))
    }
}

/// A set sorted by value (see the module's docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VecSet<T> {
    items: Vec<T>,
}

impl<T> Default for VecSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> VecSet<T> {
    /// An empty set.
    pub const fn new() -> Self {
        Self { items: Vec::new() }
    }

    /// Whether it has no item.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The items, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    /// Removes every item.
    pub fn clear(&mut self) {
        self.items.clear();
    }
}

impl<T: Ord> VecSet<T> {
    /// Whether `item` is in the set.
    pub fn contains<Q>(&self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.items
            .binary_search_by(|t| t.borrow().cmp(item))
            .is_ok()
    }

    /// Takes `item` out; whether it was there.
    pub fn remove<Q>(&mut self, item: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match self.items.binary_search_by(|t| t.borrow().cmp(item)) {
            Ok(i) => {
                self.items.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// Adds `item`; whether it was not there yet.
    pub fn insert(&mut self, item: T) -> bool {
        match self.items.binary_search(&item) {
            Ok(_) => false,
            Err(i) => {
                self.items.insert(i, item);
                true
            }
        }
    }
}

impl<T: Ord> FromIterator<T> for VecSet<T> {
    /// Inserted one by one, as [`VecMap`]'s.
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut set = Self::new();
        set.extend(iter);
        set
    }
}

impl<T: Ord> Extend<T> for VecSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for item in iter {
            self.insert(item);
        }
    }
}

impl<'a, T> IntoIterator for &'a VecSet<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    /// The items, in order.
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<T: Serialize> Serialize for VecSet<T> {
    /// A JSON array, in order (as a `BTreeSet`'s).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(&self.items)
    }
}

impl<'de, T> Deserialize<'de> for VecSet<T>
where
    T: Deserialize<'de> + Ord,
{
    /// From any array: sorted, an item given twice kept once.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<T>::deserialize(d).map(|items| items.into_iter().collect())
    }
}

impl<T> IntoIterator for VecSet<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    /// The items, in order.
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn keeps_keys_unique_and_in_order() {
        let mut m = VecMap::new();
        assert_eq!(m.insert("b".to_string(), 2), None);
        assert_eq!(m.insert("a".to_string(), 1), None);
        assert_eq!(m.insert("c".to_string(), 3), None);
        assert_eq!(m.insert("b".to_string(), 20), Some(2));
        assert_eq!(m.keys().cloned().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(m.get("b"), Some(&20));
        assert!(m.contains_key("c"));
        assert!(!m.contains_key("d"));
        *m.or_insert_with("c".to_string(), || 100) += 1;
        *m.or_insert_with("d".to_string(), || 5) += 1;
        let entries: Vec<_> = m.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(entries, [("a", 1), ("b", 20), ("c", 4), ("d", 6)]);
        assert!(!m.is_empty());
        assert!(VecMap::<String, u32>::new().is_empty());
    }

    #[test]
    fn writes_and_reads_what_a_btreemap_does() {
        let pairs = [("z", 1), ("a", 2), ("m", 3), ("a", 4)];
        let ours: VecMap<String, u32> = pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let theirs: BTreeMap<String, u32> =
            pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let json = serde_json::to_string(&ours).expect("writes");
        assert_eq!(json, serde_json::to_string(&theirs).expect("writes"));
        assert_eq!(json, r#"{"a":4,"m":3,"z":1}"#);
        // A key given twice keeps its last value, from text and from a Value.
        let text = r#"{"b":1,"a":2,"b":3}"#;
        let read: VecMap<String, u32> = serde_json::from_str(text).expect("reads");
        assert_eq!(
            read.into_iter().collect::<Vec<_>>(),
            [("a".into(), 2), ("b".into(), 3)]
        );
        let read: VecMap<String, u32> = crate::json::from_str(text).expect("reads");
        assert_eq!(read.get("b"), Some(&3));
        assert!(serde_json::from_str::<VecMap<String, u32>>("[1]").is_err());
    }

    #[test]
    fn a_set_keeps_each_item_once_in_order() {
        let mut s = VecSet::new();
        assert!(s.insert("b"));
        assert!(s.insert("a"));
        assert!(!s.insert("b"));
        assert_eq!(s.into_iter().collect::<Vec<_>>(), ["a", "b"]);
    }
}
