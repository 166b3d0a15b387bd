//! [`IndexQueue`]: messages a log has accepted but not indexed yet.
//!
//! Appending is the hot path of an agent server, and indexing a message (reading its facts:
//! role, tool ids, tokens) is most of what an append would cost. So a log accepts a message
//! by queueing it, in O(1) with nothing read, and the next call that needs the index (a token
//! sum, a cut query, a snapshot, a rewrite) indexes the whole queue into the log at once:
//! the same work per message, paid once, by a reader that needs it.
//!
//! Invariants: the history is the log's entries followed by the queued items, in order; a
//! flush empties the queue into the log in that order, so the history never changes by a
//! flush, only where its messages are kept.

use std::sync::Arc;

use crate::log::{Item, MessageLog};

/// The most queued items whose buffer a flushed queue keeps.
const KEPT_CAPACITY: usize = 16;

/// Queued items of type `Q`, waiting to be indexed into a [`MessageLog`].
#[derive(Clone, Debug)]
pub struct IndexQueue<Q> {
    items: Vec<Q>,
}

impl<Q> Default for IndexQueue<Q> {
    fn default() -> Self {
        Self { items: Vec::new() }
    }
}

impl<Q> IndexQueue<Q> {
    /// An empty queue.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues one item. O(1) amortised.
    pub fn push(&mut self, item: Q) {
        self.items.push(item);
    }

    /// Queues several items, in order.
    pub fn extend(&mut self, items: impl IntoIterator<Item = Q>) {
        self.items.extend(items);
    }

    /// Number of queued items.
    #[must_use]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True if nothing is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Message `i` of the history whose first `indexed` messages are in the log, if it is
    /// queued.
    #[must_use]
    pub fn get(&self, i: usize, indexed: usize) -> Option<&Q> {
        i.checked_sub(indexed).and_then(|j| self.items.get(j))
    }

    /// The queued items from history position `from` on (`indexed` messages are in the log).
    pub fn from_position(&self, from: usize, indexed: usize) -> impl Iterator<Item = &Q> + '_ {
        self.items[from.saturating_sub(indexed).min(self.items.len())..].iter()
    }

    /// Indexes every queued item into `log`, in order; `index` turns an item into the
    /// shared message (payload and facts) and the tokens the log counts for it.
    pub fn flush_into<P>(
        &mut self,
        log: &mut MessageLog<P>,
        mut index: impl FnMut(Q) -> (Arc<Item<P>>, u32),
    ) {
        for item in self.items.drain(..) {
            let (item, tokens) = index(item);
            log.push_item(item, tokens);
        }
        // An idle log keeps no buffer sized for its largest batch (a history loaded at
        // once would otherwise hold 16 bytes per message here for good); a turn's few
        // appends keep theirs.
        if self.items.capacity() > KEPT_CAPACITY {
            self.items = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::{Meta, Role};
    use proptest::prelude::*;

    fn meta_of(n: u32) -> Meta {
        match n % 3 {
            0 => Meta::user(n),
            1 => Meta::assistant(n).with_tool_uses([format!("c{n}")]),
            _ => Meta::new(Role::User, n).with_tool_results([format!("c{}", n - 1)]),
        }
    }

    fn indexed(n: u32) -> (Arc<Item<u32>>, u32) {
        (Item::new(n, meta_of(n)), n)
    }

    proptest! {
        /// Queueing and flushing at any points gives the log that pushing each message at
        /// once gives, and the history (log, then queue) is the same at every step.
        #[test]
        fn queued_appends_index_like_eager_ones(steps in prop::collection::vec(any::<Option<u32>>(), 0..80)) {
            let mut eager: MessageLog<u32> = MessageLog::new();
            let mut lazy: MessageLog<u32> = MessageLog::new();
            let mut queue: IndexQueue<u32> = IndexQueue::new();
            for step in steps {
                match step {
                    Some(n) => {
                        eager.push(n, meta_of(n));
                        queue.push(n);
                    }
                    None => queue.flush_into(&mut lazy, indexed),
                }
                prop_assert_eq!(lazy.len() + queue.len(), eager.len());
                let history: Vec<u32> = lazy
                    .iter()
                    .map(|e| *e.payload)
                    .chain(queue.from_position(0, lazy.len()).copied())
                    .collect();
                let expected: Vec<u32> = eager.iter().map(|e| *e.payload).collect();
                prop_assert_eq!(&history, &expected);
                for (i, n) in expected.iter().enumerate() {
                    let got = lazy.get(i).map(|e| *e.payload).or(queue.get(i, lazy.len()).copied());
                    prop_assert_eq!(got, Some(*n));
                }
            }
            queue.flush_into(&mut lazy, indexed);
            prop_assert!(queue.is_empty());
            prop_assert_eq!(lazy.total_tokens(), eager.total_tokens());
            let cuts = |log: &MessageLog<u32>| log.cuts().safe_cuts().collect::<Vec<_>>();
            prop_assert_eq!(cuts(&lazy), cuts(&eager));
            let turns = |log: &MessageLog<u32>| log.iter().map(|e| e.turn).collect::<Vec<_>>();
            prop_assert_eq!(turns(&lazy), turns(&eager));
        }
    }
}
