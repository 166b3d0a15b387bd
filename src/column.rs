//! [`Column`]: a persistent vector that is compact when small.
//!
//! The log and its cut index keep several append-mostly sequences (the entries, safe cuts,
//! turn and round starts). Most sessions are short, so a fixed per-sequence cost matters as
//! much as the per-item one: an `imbl::Vector` allocates a whole 64-slot chunk as soon as it
//! outgrows its inline buffer, ~1.5 KB for a log of 50 entries of 24 bytes, and every small
//! index vector does the same. A `Column` keeps its items in
//!
//! - an unshared-or-shared *tail*, `Arc<Vec<T>>` of fewer than [`CHUNK`] items, which grows
//!   by half (4, 6, 9, 13, … slots), so a small column costs about its items; and
//! - full chunks of exactly [`CHUNK`] items, `Arc<[T]>`, immutable once sealed, in an
//!   `imbl::Vector` (O(log₆₄ n) lookups, O(1) clone and amortised O(1) push), allocated only
//!   once the first chunk fills.
//!
//! Invariants: `full` holds only chunks of exactly `CHUNK` items and the tail fewer than
//! `CHUNK`; item `i` is `full[i / CHUNK][i % CHUNK]` below `full.len() * CHUNK` and the tail's
//! item `i - full.len() * CHUNK` above. A clone is a value: changes to either side are
//! invisible to the other.
//!
//! Costs: clone O(1) (two reference-count bumps). `push`: amortised O(1); while a clone
//! shares the tail, the first push copies it (at most `CHUNK - 1` items), later pushes find it
//! unshared. `pop`: O(1), or O(`CHUNK`) when the tail is empty (the last chunk is unsealed).
//! `get`: O(1) in the tail, O(log₆₄ n) before it.

use std::sync::Arc;

use imbl::Vector;

/// Items per sealed chunk.
pub const CHUNK: usize = 64;

/// The capacity a tail of `len` items grows to: by half (4, 6, 9, 13, 19, 28, 42, 63), so a
/// short column wastes less than with doubling and still copies each item O(1) times.
fn grown(len: usize) -> usize {
    (len + (len / 2).max(4)).min(CHUNK - 1)
}

/// A persistent vector of `T`: O(1) clone, amortised O(1) push and pop at the end, and a
/// size that follows the item count for short columns.
pub struct Column<T> {
    /// Sealed chunks of exactly `CHUNK` items; `None` until the first one fills (an empty
    /// `imbl::Vector` would add its 64-byte inline buffer to every column).
    full: Option<Arc<Vector<Arc<[T]>>>>,
    /// The last `len % CHUNK`-ish items (fewer than `CHUNK`); `None` while empty.
    tail: Option<Arc<Vec<T>>>,
}

impl<T> Clone for Column<T> {
    fn clone(&self) -> Self {
        Self {
            full: self.full.clone(),
            tail: self.tail.clone(),
        }
    }
}

impl<T> Default for Column<T> {
    fn default() -> Self {
        Self {
            full: None,
            tail: None,
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Column<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T> Column<T> {
    /// An empty column (no allocation).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of sealed chunks.
    fn chunks(&self) -> usize {
        self.full.as_ref().map_or(0, |f| f.len())
    }

    /// Items in sealed chunks.
    fn sealed(&self) -> usize {
        self.chunks() * CHUNK
    }

    fn tail(&self) -> &[T] {
        self.tail.as_deref().map_or(&[], |t| t.as_slice())
    }

    /// Number of items.
    #[must_use]
    pub fn len(&self) -> usize {
        self.sealed() + self.tail().len()
    }

    /// True if the column holds no item.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tail.is_none() && self.full.is_none()
    }

    /// Item `i`, or `None` past the end.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<&T> {
        let sealed = self.sealed();
        if i >= sealed {
            return self.tail().get(i - sealed);
        }
        let chunk = self.full.as_ref()?.get(i / CHUNK)?;
        chunk.get(i % CHUNK)
    }

    /// The last item.
    #[must_use]
    pub fn last(&self) -> Option<&T> {
        match self.tail().last() {
            Some(item) => Some(item),
            None => self.full.as_ref()?.last()?.last(),
        }
    }

    /// The first item.
    #[must_use]
    pub fn first(&self) -> Option<&T> {
        self.get(0)
    }

    /// All items in order.
    #[must_use]
    pub fn iter(&self) -> Iter<'_, T> {
        self.range(0, self.len())
    }

    /// Items `start..end`, both clamped to the column.
    #[must_use]
    pub fn range(&self, start: usize, end: usize) -> Iter<'_, T> {
        let end = end.min(self.len());
        Iter {
            column: self,
            front: start.min(end),
            back: end,
            slice: &[],
        }
    }
}

impl<T: Clone> Column<T> {
    /// Appends an item. Amortised O(1), also while clones share the column.
    pub fn push(&mut self, item: T) {
        let tail = self.tail.get_or_insert_with(|| Arc::new(Vec::new()));
        let len = tail.len();
        if len + 1 < CHUNK {
            if Arc::get_mut(tail).is_none() {
                // Shared with a clone: copy it once, with room to grow.
                let mut copy = Vec::with_capacity(grown(len));
                copy.extend_from_slice(tail);
                *tail = Arc::new(copy);
            }
            let tail = Arc::make_mut(tail); // unshared: no copy
            if tail.len() == tail.capacity() {
                tail.reserve_exact(grown(len) - len);
            }
            tail.push(item);
            return;
        }
        // The tail fills a chunk: seal it (its items moved if unshared, else cloned).
        let chunk: Arc<[T]> = match self.tail.take().map(Arc::try_unwrap) {
            Some(Ok(mut own)) => {
                own.reserve_exact(1);
                own.push(item);
                Arc::from(own)
            }
            Some(Err(shared)) => shared
                .iter()
                .cloned()
                .chain(std::iter::once(item))
                .collect(),
            None => Arc::from([item]),
        };
        let full = self.full.get_or_insert_with(|| Arc::new(Vector::new()));
        Arc::make_mut(full).push_back(chunk);
    }

    /// Removes and returns the last item.
    pub fn pop(&mut self) -> Option<T> {
        if self.tail.is_none() {
            // Unseal the last chunk (copied if a clone shares it).
            let full = self.full.as_mut()?;
            let chunk = Arc::make_mut(full).pop_back()?;
            if full.is_empty() {
                self.full = None;
            }
            self.tail = Some(Arc::new(chunk.to_vec()));
        }
        let tail = self.tail.as_mut()?;
        let item = Arc::make_mut(tail).pop();
        if tail.is_empty() {
            self.tail = None;
        }
        item
    }

    /// The first `n` items (clamped): sealed chunks shared, the rest copied. O(log n + CHUNK).
    #[must_use]
    pub fn take(&self, n: usize) -> Self {
        let n = n.min(self.len());
        let whole = n / CHUNK;
        let full = self.full.as_ref().and_then(|f| {
            (whole > 0).then(|| {
                Arc::new(if whole == f.len() {
                    (**f).clone()
                } else {
                    f.take(whole)
                })
            })
        });
        let mut out = Self { full, tail: None };
        for item in self.range(whole * CHUNK, n) {
            out.push(item.clone());
        }
        out
    }
}

impl<'a, T> IntoIterator for &'a Column<T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

/// An iterator over a range of a [`Column`]; reads a sealed chunk as one slice.
pub struct Iter<'a, T> {
    column: &'a Column<T>,
    front: usize,
    back: usize,
    /// Items from `front` on in the chunk being read (may run past `back`).
    slice: &'a [T],
}

impl<T> Clone for Iter<'_, T> {
    fn clone(&self) -> Self {
        Self {
            column: self.column,
            front: self.front,
            back: self.back,
            slice: self.slice,
        }
    }
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        if self.front >= self.back {
            return None;
        }
        if self.slice.is_empty() {
            let sealed = self.column.sealed();
            self.slice = if self.front >= sealed {
                &self.column.tail()[self.front - sealed..]
            } else {
                let chunk = self.column.full.as_ref()?.get(self.front / CHUNK)?;
                &chunk[self.front % CHUNK..]
            };
        }
        let (item, rest) = self.slice.split_first()?;
        self.slice = rest;
        self.front += 1;
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }
}

impl<T> DoubleEndedIterator for Iter<'_, T> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        self.column.get(self.back)
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any sequence of pushes, pops, clones and prefixes behaves as a `Vec` does, and
        /// an earlier clone never changes.
        #[test]
        fn behaves_like_a_vec(ops in prop::collection::vec((0u8..10, 0usize..300), 0..400)) {
            let mut col: Column<usize> = Column::new();
            let mut model: Vec<usize> = Vec::new();
            let mut kept: Vec<(Column<usize>, Vec<usize>)> = Vec::new();
            for (k, (op, arg)) in ops.into_iter().enumerate() {
                match op {
                    0..=5 => { col.push(k); model.push(k); }
                    6 | 7 => { prop_assert_eq!(col.pop(), model.pop()); }
                    8 => kept.push((col.clone(), model.clone())),
                    _ => { col = col.take(arg); model.truncate(arg); }
                }
                prop_assert_eq!(col.len(), model.len());
                prop_assert_eq!(col.is_empty(), model.is_empty());
                prop_assert_eq!(col.last(), model.last());
                prop_assert_eq!(col.first(), model.first());
            }
            prop_assert_eq!(col.iter().copied().collect::<Vec<_>>(), model.clone());
            prop_assert_eq!(col.iter().rev().copied().collect::<Vec<_>>(),
                            model.iter().rev().copied().collect::<Vec<_>>());
            for (i, m) in model.iter().enumerate() {
                prop_assert_eq!(col.get(i), Some(m));
            }
            prop_assert_eq!(col.get(model.len()), None);
            let (a, b) = (model.len() / 3, model.len() * 2 / 3 + 1);
            prop_assert_eq!(col.range(a, b).copied().collect::<Vec<_>>(), model[a..b.min(model.len())].to_vec());
            let mut mixed = col.range(a, b);
            let (mut front, mut back) = (Vec::new(), Vec::new());
            while let Some(x) = mixed.next() {
                front.push(*x);
                if let Some(y) = mixed.next_back() { back.push(*y); }
            }
            back.reverse();
            front.extend(back);
            prop_assert_eq!(front, model[a..b.min(model.len())].to_vec());
            for (c, m) in kept {
                prop_assert_eq!(c.iter().copied().collect::<Vec<_>>(), m);
            }
        }
    }
}
