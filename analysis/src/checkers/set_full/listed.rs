//! A list that keeps only its first `cap` items by a sort key, however many are pushed or
//! merged in: the bounded, mergeable form of "at most N of each kind, in history order".
//!
//! Invariant: after any sequence of pushes and merges, [`Listed::into_sorted`] is the first
//! `cap` items by key of everything pushed anywhere, the same whatever the grouping; keys
//! are unique per item, so ties never depend on the order things arrived in.

pub(crate) struct Listed<K, T> {
    cap: usize,
    items: Vec<(K, T)>,
}

impl<K: Ord, T> Listed<K, T> {
    pub fn new(cap: usize) -> Self {
        Listed {
            cap,
            items: Vec::new(),
        }
    }

    pub fn push(&mut self, key: K, item: T) {
        self.items.push((key, item));
        if self.items.len() >= 2 * self.cap.max(1) {
            self.keep_first();
        }
    }

    pub fn merge(&mut self, other: Listed<K, T>) {
        for (key, item) in other.items {
            self.push(key, item);
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &(K, T)> {
        self.items.iter()
    }

    /// The first `cap` items by key, in key order, borrowed: what [`Listed::into_sorted`]
    /// would give, for a list that must stay whole.
    pub fn first_sorted(&self) -> Vec<&T> {
        let mut shown: Vec<&(K, T)> = self.items.iter().collect();
        shown.sort_by(|a, b| a.0.cmp(&b.0));
        shown.truncate(self.cap);
        shown.into_iter().map(|(_, item)| item).collect()
    }

    /// The first `cap` items by key, in key order.
    pub fn into_sorted(mut self) -> Vec<T> {
        self.keep_first();
        self.items.into_iter().map(|(_, item)| item).collect()
    }

    fn keep_first(&mut self) {
        self.items.sort_by(|a, b| a.0.cmp(&b.0));
        self.items.truncate(self.cap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_items_by_key_whatever_the_grouping() {
        let keys = [9u64, 3, 7, 1, 8, 2, 6, 4, 5, 0];
        let mut whole = Listed::new(4);
        for k in keys {
            whole.push(k, k * 10);
        }
        let (mut left, mut right) = (Listed::new(4), Listed::new(4));
        for (i, k) in keys.into_iter().enumerate() {
            if i % 3 == 0 { left.push(k, k * 10) } else { right.push(k, k * 10) }
        }
        left.merge(right);
        assert_eq!(whole.first_sorted(), vec![&0, &10, &20, &30]);
        assert_eq!(whole.into_sorted(), vec![0, 10, 20, 30]);
        assert_eq!(left.into_sorted(), vec![0, 10, 20, 30]);
    }
}
